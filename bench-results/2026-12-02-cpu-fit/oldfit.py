# Issue 34: the fit as it was before the all-compute cut (every cut but
# that one, as crates/goodput-sim/src/calibrate/fit.rs solves them), on the
# observations a calibrate.txt printed; prints the profile with that step
# model (its covariance left as it was: for the point forecast only).
#   python3 oldfit.py calibrate.txt profile.toml > profile-oldfit.toml
import re, sys, numpy as np
txt=open(sys.argv[1]).read(); prof=open(sys.argv[2]).read(); budget=2048
obs=[]
for m in re.finditer(r"prefill: (\d+) prompt tokens, median TTFT ([\d.]+) ms \(spread ([\d.]+)\) over (\d+)",txt):
    obs.append(('p',int(m[1]),float(m[2]),float(m[3]),int(m[4])))
for m in re.finditer(r"decode: batch (\d+), context (\d+), median gap ([\d.]+) ms \(spread ([\d.]+)\) over (\d+)",txt):
    obs.append(('d',int(m[1]),float(m[2]),float(m[3]),float(m[4]),int(m[5])))
PR=[1,3,0,5,6,4,2]
def solve(X,y,w):
    sw=np.sqrt(w); A=X*sw[:,None]; b=y*sw
    free=[j for j in PR if np.linalg.norm(A[:,j])>0]
    # Gram-Schmidt identifiability in priority order
    basis=[];keep=[]
    for j in free:
        v=A[:,j]/np.linalg.norm(A[:,j])
        for _ in range(2):
            for q in basis: v=v-np.dot(v,q)*q
        if np.linalg.norm(v)<np.sqrt(1e-7): continue
        basis.append(v/np.linalg.norm(v)); keep.append(j)
    free=keep
    while True:
        sub=A[:,free]; sc=np.linalg.norm(sub,axis=0)
        x=np.linalg.lstsq(sub/sc,b,rcond=None)[0]/sc
        if (x<0).any(): free.pop(int(np.argmin(x*sc))); continue
        th=np.zeros(7); th[free]=x; return th, free
best=None
for knee in sorted(set([o[1] for o in obs if o[0]=='d']+[o[1] for o in obs if o[0]=='p'])):
    X=[];y=[];w=[]
    for o in obs:
        x=np.zeros(7)
        if o[0]=='p':
            n=o[1]; x[0]=1; x[2]=1; t=n; pairs=n*(n+1)/2; ctx=0; med,sp,c=o[2],o[3],o[4]
        else:
            b=o[1]; t=b; x[2]=b; pairs=0; ctx=b*o[2]; med,sp,c=o[3],o[4],o[5]
        if t>knee: x[4]+=1; x[3]+=t
        else: x[1]+=1
        x[5]=ctx; x[6]=pairs
        se=max(1.2533*sp/np.sqrt(c),1e-3*med,1e-3)
        X.append(x);y.append(med);w.append(1/se**2)
    X=np.array(X);y=np.array(y);w=np.array(w)
    th,free=solve(X,y,w)
    chi=np.sum(w*(y-X@th)**2)
    anyc=(X[:,3]>0).any()
    toks=[o[1] for o in obs]
    sides_ok=all(((th[4]+th[3]*t>th[1]) == (t>knee)) for t in toks)
    cons=sides_ok and (not anyc or 3 in free)
    if best is None or (cons,-chi)>(best[0],-best[1]): best=(cons,chi,th,knee)
cons,chi,th,knee=best
print("old fit: knee",knee,"consistent",cons,"chi2 %.1f"%chi, "R %.2f ms D %.3f B %.3f G %.4f P %.3f K %.6f A %.3e"%tuple(th), file=sys.stderr)
R,D,B,G,P,K,A=th
vals={'request_latency_ms':R,'weights_ms':D,'per_seq_us':B*1e3,'token_us':G*1e3,'gemm_half_tokens':(P/G if G>0 else 0.0),'context_token_ns':K*1e6,'attention_pair_ps':A*1e9}
out=[];sec=''
for line in prof.splitlines():
    if line.startswith('['): sec=line.strip()
    k=line.split(' = ')[0]
    if k in vals and sec in ('','[step]'): line=f"{k} = {vals[k]}"
    out.append(line)
print("\n".join(out))

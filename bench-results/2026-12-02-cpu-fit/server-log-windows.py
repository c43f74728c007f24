# Issue 34: llama-server's own per-request timings (print_timing lines of
# its log) in windows of W seconds: requests, prompt eval per token, eval
# per token.   python3 server-log-windows.py server.log [W]
import re,sys,collections
rows=[]
cur={}
for line in open(sys.argv[1]):
    m=re.match(r"(\d+)\.(\d+)\.(\d+)\.(\d+) I slot print_timing: id +\d+ \| task (\d+) \| +(prompt eval|eval) time = +([\d.]+) ms / +(\d+) tokens",line)
    if not m: continue
    t=int(m[1])*60+int(m[2])+int(m[3])/1e3
    task=int(m[5])
    if m[6]=='prompt eval': cur[task]=(t,float(m[7]),int(m[8]))
    else:
        if task in cur:
            t0,pm,pt=cur.pop(task); rows.append((t,pm,pt,float(m[7]),int(m[8])))
W=float(sys.argv[2]) if len(sys.argv)>2 else 20
b=collections.defaultdict(list)
for r in rows: b[int(r[0]//W)].append(r)
print("window  n  req/s  prompt_ms(mean) ms/prompt-token  eval ms/token  busy%")
for k in sorted(b):
    v=b[k]; n=len(v)
    pm=sum(r[1] for r in v)/n; pt=sum(r[2] for r in v)/n
    ev=sum(r[3] for r in v)/max(1,sum(r[4] for r in v))
    busy=sum(r[1]+r[3] for r in v)/(W*1000)
    print(f"{k*W:6.0f} {n:3d} {n/W:5.2f} {pm:7.1f} {pm/pt:7.3f} {ev:7.3f} {busy*100:5.0f}")

# Issue 34: a 518-token prefill alone and beside a decode on configuration C, timed by the server (prompt_ms).   python3 mixed.py URL
import json, sys, time, threading, urllib.request, random
url=sys.argv[1]
def post(body):
    req=urllib.request.Request(url+"/completion", data=json.dumps(body).encode(), headers={"Content-Type":"application/json"})
    t=time.perf_counter(); r=json.loads(urllib.request.urlopen(req).read()); return time.perf_counter()-t, r
rng=random.Random(1)
def prompt(n): return [rng.randrange(10, 200) for _ in range(n)]
def probe(n):
    dt, r = post({"prompt": prompt(n), "n_predict": 1, "cache_prompt": False})
    return dt*1e3, r["timings"]["prompt_ms"]
res={"alone":[], "beside a decode":[]}
for i in range(8):
    res["alone"].append(probe(518)); time.sleep(0.05)
    bg=threading.Thread(target=post, args=({"prompt": prompt(64), "n_predict": 400, "ignore_eos": True, "cache_prompt": False},))
    bg.start(); time.sleep(0.1)
    res["beside a decode"].append(probe(518)); bg.join()
for k,v in res.items():
    v=sorted(v); print(f"{k}: client ms median {v[len(v)//2][0]:.1f}, server prompt_ms median {sorted(x[1] for x in v)[len(v)//2]:.1f}  all prompt_ms {[round(x[1],1) for x in v]}")

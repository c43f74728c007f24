# Issue 34: 48 prefills of 518 tokens one after another on a fresh configuration C server, timed by the server.   python3 drift.py URL
import json, sys, time, urllib.request, random
url=sys.argv[1]
def post(body):
    req=urllib.request.Request(url+"/completion", data=json.dumps(body).encode(), headers={"Content-Type":"application/json"})
    return json.loads(urllib.request.urlopen(req).read())
rng=random.Random(2)
out=[]
for i in range(48):
    r=post({"prompt": [rng.randrange(10,200) for _ in range(518)], "n_predict": 64, "ignore_eos": True, "cache_prompt": False})
    out.append(r["timings"]["prompt_ms"])
for i in range(0,48,8): print(i, [round(x,1) for x in out[i:i+8]])

# The "before" half of the study: the binary at 8f80b8d (/tmp/goodput-8f80b8d) forecasting
# from the same profiles run.sh wrote (run from its OUT_DIR, /tmp/fcov here).
set -e
cd /tmp/fcov
W1="--input-tokens 512 --output-tokens 128"; S1="ttft:p99<=300ms,tpot:p99<=50ms"
W2="--input-tokens 2048 --output-tokens 256"; S2="ttft:p99<=1000ms"
echo "box,workload,predicted,low,high,truth,covers" > before.csv
for i in 1 2 3 4; do for j in 1 2; do
  if [ $j = 1 ]; then W=$W1; S=$S1; else W=$W2; S=$S2; fi
  /tmp/goodput-8f80b8d predict --profile profile-$i.toml --slo "$S" $W --draws 16 --out before-$i-$j.json >/dev/null 2>&1
  python3 -c "
import json; f=json.load(open('before-$i-$j.json')); t=json.load(open('truth-$i-$j.json'))['goodput']
iv=f['interval']; print(f\"$i,$j,{f['goodput']:.3f},{iv['low']:.3f},{iv['high']:.3f},{t:.3f},{'yes' if iv['low']<=t<=iv['high'] else 'no'}\")" >> before.csv
done; done
cat before.csv

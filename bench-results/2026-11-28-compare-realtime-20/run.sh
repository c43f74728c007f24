#!/bin/bash
# 20 pairs of same-plan runs against goodput sim in real time, different seeds.
set -u
B=/work/main/target/release/goodput
cd /tmp/rtc
$B sim --port 18231 > sim.log 2>&1 &
SIM=$!
sleep 2
for i in $(seq 1 40); do
  $B run --url http://127.0.0.1:18231 --request-rate 8 --num-prompts 200 --input-tokens 512 --output-tokens 64 --seed $i --out r$i.json --records r$i.jsonl -q > /dev/null 2> err$i.log
  echo "run $i rc $?" >> progress.log
done
kill $SIM
for p in $(seq 1 20); do
  a=$((2*p-1)); b=$((2*p))
  $B compare r$a.json r$b.json --base-records r$a.jsonl --new-records r$b.jsonl --format json > c$p.json 2> cerr$p.log
  $B compare r$a.json r$b.json --base-records r$a.jsonl --new-records r$b.jsonl > c$p.txt 2>&1
done
echo done >> progress.log

# Sourced by run.sh and predict.sh: start_server SERVER GGUF SLOTS LOG
# starts llama.cpp's server on a free port with one thread, kills it when
# the script exits, waits until it is healthy, and sets $url.
start_server() {
  local server=$1 gguf=$2 slots=$3 log=$4 port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$server" -m "$gguf" --host 127.0.0.1 --port "$port" --parallel "$slots" -c 4096 \
    --threads 1 --threads-batch 1 --metrics --no-webui --seed 1 >"$log" 2>&1 &
  server_pid=$!
  trap 'kill $server_pid 2>/dev/null' EXIT
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done
  url="http://127.0.0.1:$port"
}

# Sourced by bench/agent.sh and bench/chat.sh: one scripted provider
# (bench/agent_provider.py) per run, so each log holds that run alone, and
# wield's configuration pointing at it. Needs PROVIDER and XDG_CONFIG_HOME.
provider_pid=""
stop_provider() { [ -z "$provider_pid" ] || { kill "$provider_pid" 2>/dev/null || true; wait "$provider_pid" 2>/dev/null || true; }; provider_pid=""; }
trap stop_provider EXIT
start_provider() { # LOG: starts it, sets $port and writes wield's configuration
  python3 "$PROVIDER" --log "$1" > "$1.port" &
  provider_pid=$!
  for _ in $(seq 100); do [ -s "$1.port" ] && break; sleep 0.05; done
  port=$(cat "$1.port")
  [ -n "$port" ] || { echo "the bench provider did not start" >&2; exit 1; }
  cat > "$XDG_CONFIG_HOME/wield/config.toml" <<CONF
default_provider = "bench"

[providers.bench]
kind = "openai-responses"
base_url = "http://127.0.0.1:$port/v1"
model = "bench-model"
api_key_env = "BENCH_API_KEY"
max_retries = 0
CONF
}

# Fidelity probe: prints what a fresh `bash -c` sees of itself, one
# "key<TAB>value" line each. Variables bash sets for itself are left out.
fds=$(ls -l /proc/$$/fd | awk 'NR > 1 { sub(/:\[.*/, "", $NF); printf "%s=%s ", $9, $NF }')
stdin_text=$(cat; echo .)
emit() { printf '%s\t%s\n' "$1" "$2"; }
emit zero "$0"
emit args "$#:$*"
emit flags "$-"
emit options "$(set -o | tr -s ' \t' ' ' | tr '\n' ',')"
emit shopt "$(shopt | tr -s ' \t' ' ' | tr '\n' ',')"
emit traps "$(trap -p | tr '\n' ',')"
emit umask "$(umask)"
emit ulimit "$(ulimit -a | tr -s ' \t' ' ' | tr '\n' ',')"
emit exported "$(export -p | sed 's/=.*//' | tr '\n' ',')"
emit env "$(env | sort | tr '\n' ',')"
emit cwd "$(pwd)"
stdin_text=${stdin_text%.}
emit stdin "${stdin_text//$'\n'/\\n}"
emit sig "$(grep -E '^(SigBlk|SigIgn|SigCgt|NoNewPrivs|Seccomp)' /proc/$$/status | tr -s ' \t' ' ' | tr '\n' ',')"
emit fds "$fds"
emit ids "$(id -u):$(id -g):$(id -G)"
emit history "$HISTFILE"
emit perrun "$RANDOM $$ $(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"

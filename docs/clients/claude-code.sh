# Claude Code: add codexec for yourself (local scope); --scope project writes .mcp.json instead.
claude mcp add --transport stdio --env CODEXEC_SANDBOX_MODE=auto --env ALLOWED_COMMANDS=ls,cat,git codexec -- /usr/local/bin/codexec serve

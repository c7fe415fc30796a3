# git_hash.cmake: writes generated/git_hash.h (OPPERF_GIT_HASH: `git describe --always --dirty`
# of the source tree, "unknown" outside git) at every build, not only at configure time: a binary
# rebuilt from uncommitted edits says "-dirty", and one rebuilt after a commit names it, in git
# worktrees too. The header is rewritten only when its text changes, so an unchanged hash
# recompiles nothing. Run as: cmake -DSRC=<source dir> -DOUT=<header> -P git_hash.cmake
execute_process(COMMAND git describe --always --dirty --abbrev=12 WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE _hash OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT _hash)
  set(_hash "unknown")
endif()
file(WRITE ${OUT}.tmp "/* git_hash.h: generated at every build by cmake/git_hash.cmake; do not edit. */\n"
                      "#ifndef OPPERF_GIT_HASH_H\n#define OPPERF_GIT_HASH_H\n"
                      "#define OPPERF_GIT_HASH \"${_hash}\"\n#endif\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)

# Writes OUTPUT (a header defining METASRV_GIT_COMMIT) from SOURCE_DIR's git
# HEAD, only when it differs from what is there: run at every build, so the
# commit in --version and metasrv_build_info is the one built, and nothing
# recompiles when it did not change.
#   cmake -DSOURCE_DIR=... -DOUTPUT=... -P scripts/build_commit.cmake
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE commit
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
if(failed OR NOT commit)
  set(commit unknown)
endif()
set(content "#define METASRV_GIT_COMMIT \"${commit}\"\n")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT "${old}" STREQUAL "${content}")
  file(WRITE ${OUTPUT} "${content}")
endif()

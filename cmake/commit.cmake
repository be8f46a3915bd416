# Run at every build (cmake -P): stamps gen/kgate_build.h with the commit the
# sources are at now, so a rebuild after a commit does not report the commit
# the build was configured at. configure_file rewrites the header only when
# its text changes, so an unchanged commit recompiles nothing.
# In: SRC, OUT, VERSION.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE KG_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE KG_DIRTY OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT KG_COMMIT)
  set(KG_COMMIT unknown)
endif()
if(KG_DIRTY)
  set(KG_COMMIT "${KG_COMMIT}-dirty")
endif()
set(PROJECT_VERSION ${VERSION})
set(CMAKE_SOURCE_DIR ${SRC})
configure_file(${SRC}/src/app/kgate_build.h.in ${OUT})

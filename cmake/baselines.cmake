# Run at build time (cmake -P) when a library path's source changes: writes
# gen/baselines_table.c, the table of library paths (src/gpu/baseline.c finds
# them by name in it). A path is a line of src/gpu/baseline*.c or
# baseline*.cu that starts with
#     const kg_baseline kg_baseline_<name> =      (or extern "C" const ...)
# so defining the path adds it to the table. file(CONFIGURE) rewrites the
# file only when its text changes.
# In: DIR (src/gpu), OUT.
file(GLOB sources ${DIR}/baseline*.c ${DIR}/baseline*.cu)
list(SORT sources)
set(decls "")
set(rows "")
foreach(f ${sources})
  file(STRINGS ${f} defs REGEX "^(extern \"C\" )?const kg_baseline kg_baseline_[a-z0-9_]+ =")
  foreach(d ${defs})
    string(REGEX MATCH "kg_baseline_[a-z0-9_]+" sym "${d}")
    string(APPEND decls "extern const kg_baseline ${sym};\n")
    string(APPEND rows "    &${sym},\n")
  endforeach()
endforeach()
file(CONFIGURE OUTPUT ${OUT} CONTENT
     "/* generated from src/gpu/baseline* by cmake/baselines.cmake */\n#include \"gpu/baseline.h\"\n\n${decls}\nconst kg_baseline *const kg_baseline_table[] = {\n${rows}    0,\n};\n" @ONLY)

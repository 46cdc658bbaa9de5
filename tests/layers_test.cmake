# The layer rules of docs/ARCHITECTURE.md, checked on the #include lines of the sources:
#   cmake -DSOURCE_DIR=<project> -P layers_test.cmake
# Fails, naming each file and include that breaks a rule.
cmake_minimum_required(VERSION 3.25)

if(NOT DEFINED SOURCE_DIR)
  message(FATAL_ERROR "layers_test.cmake: pass -DSOURCE_DIR=...")
endif()

set(failures "")

# The includes of every source file under `folder` (relative to SOURCE_DIR), as "file|include"
# items, the include with its quotes or angle brackets.
function(collect_includes folder out)
  file(GLOB_RECURSE files LIST_DIRECTORIES false RELATIVE "${SOURCE_DIR}"
       "${SOURCE_DIR}/${folder}/*.hpp" "${SOURCE_DIR}/${folder}/*.cpp" "${SOURCE_DIR}/${folder}/*.h")
  list(SORT files)
  set(items "")
  foreach(f IN LISTS files)
    file(STRINGS "${SOURCE_DIR}/${f}" lines REGEX "^[ \t]*#[ \t]*include")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*([<\"][^>\"]*[>\"]).*$" "\\1" inc "${line}")
      list(APPEND items "${f}|${inc}")
    endforeach()
  endforeach()
  set(${out} "${items}" PARENT_SCOPE)
endfunction()

# Each include of `folder` must match one of the regular expressions in ARGN.
function(only_includes folder rule)
  collect_includes(${folder} items)
  foreach(item IN LISTS items)
    string(REPLACE "|" ";" parts "${item}")
    list(GET parts 0 f)
    list(GET parts 1 inc)
    set(ok FALSE)
    foreach(allowed IN LISTS ARGN)
      if(inc MATCHES "${allowed}")
        set(ok TRUE)
      endif()
    endforeach()
    if(NOT ok)
      set(failures "${failures}  ${f}: #include ${inc} (${rule})\n" PARENT_SCOPE)
      set(failures "${failures}  ${f}: #include ${inc} (${rule})\n")
    endif()
  endforeach()
endfunction()

# No include of `folder` may match any of the regular expressions in ARGN.
function(forbid_includes folder rule)
  collect_includes(${folder} items)
  foreach(item IN LISTS items)
    string(REPLACE "|" ";" parts "${item}")
    list(GET parts 0 f)
    list(GET parts 1 inc)
    foreach(forbidden IN LISTS ARGN)
      if(inc MATCHES "${forbidden}")
        set(failures "${failures}  ${f}: #include ${inc} (${rule})\n")
      endif()
    endforeach()
  endforeach()
  set(failures "${failures}" PARENT_SCOPE)
endfunction()

# A standard header: <vector>, <cstdio> (no extension, no folder).
set(standard "^<[a-z_0-9]+>$")

# The front end is pure: other front-end headers, the public dtype and error types, the standard
# library.
only_includes(jit/frontend "front end: only jit/frontend/, kjit/dtype.hpp, kjit/error.hpp, standard headers"
  "^\"jit/frontend/[a-z_0-9]+\\.hpp\"$" "^\"kjit/dtype\\.hpp\"$" "^\"kjit/error\\.hpp\"$" "${standard}")

# Code generation builds on the front end alone, and on the argument struct's layout (whose offsets
# the generated code checks with static_assert).
only_includes(jit/codegen "code generation: only jit/frontend/, jit/codegen/, kjit/dtype.hpp, kjit/error.hpp, runtime/detail/kernel_args.hpp, standard headers"
  "^\"jit/(frontend|codegen)/[a-z_0-9]+\\.hpp\"$" "^\"kjit/dtype\\.hpp\"$" "^\"kjit/error\\.hpp\"$"
  "^\"runtime/detail/kernel_args\\.hpp\"$" "${standard}")

# Neither touches the driver or NVRTC.
foreach(folder jit/frontend jit/codegen)
  forbid_includes(${folder} "no driver, NVRTC or modules"
    "^<cuda\\.h>$" "^<nvrtc\\.h>$" "^\"runtime/detail/(driver|nvrtc|module)\\.hpp\"$")
endforeach()

# The public headers need no CUDA header: an application includes <cuda.h> only for its own
# driver calls (kjit/cuda_handles.hpp declares the handle types as <cuda.h> does).
forbid_includes(include/kjit "public headers: no CUDA header" "^<(cuda|cuda_runtime|nvrtc|cublas.*)\\.h>$")

# The compiler layer (NVRTC, architectures, the program store) knows nothing of kernels, code
# generation or the front end.
forbid_includes(jit/compile "compile: from jit/, only jit/compile/" "^\"jit/(frontend|codegen|kernels|host)/")

# libkjit_host.so sees libkjit through the front end, the code generator's reduction pieces and the
# back-end interface (jit/host/host_backend.hpp) only: it never compiles CUDA, loads modules or
# launches.
only_includes(jit/host/llvm "libkjit_host: only jit/frontend/, jit/codegen/, jit/host/host_backend.hpp, jit/host/llvm/, kjit/, runtime/detail/{call_layout,kernel_args}.hpp, templates/, LLVM and standard headers"
  "^\"jit/(frontend|codegen|host/llvm)/[a-z_0-9]+\\.hpp\"$" "^\"jit/host/host_backend\\.hpp\"$" "^\"kjit/[a-z_0-9]+\\.hpp\"$"
  "^\"runtime/detail/(call_layout|kernel_args)\\.hpp\"$" "^\"templates/[a-z_0-9]+\\.cuh\"$" "^<llvm/" "^<math\\.h>$" "${standard}")

# The runtime and the cache are below jit/: no function pointers registered upwards, no includes.
foreach(folder runtime cache)
  forbid_includes(${folder} "${folder}/ includes nothing from jit/" "^\"jit/")
endforeach()

if(failures)
  message(FATAL_ERROR "Layer rules broken (docs/ARCHITECTURE.md):\n${failures}")
endif()
message(STATUS "Layer rules hold")

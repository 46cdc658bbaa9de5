# Debian packages of kjit, made by CPack from the install components (`cpack -G DEB` in the build
# folder; tools/package-test.sh installs them into a scratch root and uses them):
#   libkjit0       libkjit.so.0 (the soname follows docs/ABI.md)        component runtime
#   libkjit-dev    headers, the CMake package, kjit.pc, libkjit.so      component dev
#   libkjit-host0  libkjit_host.so, the host back end (LLVM 19)          component host
#   kjit-tools     the kjit program and kjit-probe                       component tools
# No package depends on a GPU driver or on CUDA: libkjit loads libcuda, NVRTC, nvJitLink and
# cuBLAS at run time and says what is missing when a call needs one.

# kjit has no public maintainer address yet: the default says so (.invalid); set it for a release.
set(KJIT_PACKAGE_MAINTAINER "kjit developers <dev@kjit.invalid>" CACHE STRING "Maintainer field of kjit's packages")
set(KJIT_DEB_RELEASE 1)
set(KJIT_DEB_VERSION ${PROJECT_VERSION}-${KJIT_DEB_RELEASE})

set(CPACK_PACKAGE_NAME kjit)
set(CPACK_PACKAGE_VENDOR "the kjit developers")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${KJIT_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${KJIT_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${KJIT_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
if(KJIT_HOMEPAGE)
  set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${KJIT_HOMEPAGE}")
endif()
# Depends from dpkg-shlibdeps (libc6, libstdc++6, libgcc-s1, libllvm19...); libkjit.so.0 itself is
# found in the build folder and has no package information there, so the packages that use it
# name libkjit0 below.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR})
# libkjit0 gets a shlibs file (libkjit 0 libkjit0 (>= VERSION)), and an ldconfig trigger instead
# of the postinst and postrm calling ldconfig that CPack would write (Debian policy 8.1.1).
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(kjit_deb_scripts ${PROJECT_SOURCE_DIR}/packaging/debian/libkjit0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
    ${kjit_deb_scripts}/triggers ${kjit_deb_scripts}/postinst ${kjit_deb_scripts}/postrm)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libkjit0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "JIT runtime for GPU kernels written as C-like strings
kjit turns elementwise, reduction and raw CUDA kernels written as strings
into running GPU code: it parses and type-checks them, generates CUDA,
compiles it with NVRTC and keeps the binaries in a disk cache that can be
built ahead of time. The CUDA driver, NVRTC and cuBLAS are loaded at run
time, so this package depends on none of them; without a GPU kjit still
compiles kernels.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libkjit-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libkjit0 (= ${KJIT_DEB_VERSION})")
set(CPACK_DEBIAN_DEV_DESCRIPTION "JIT runtime for GPU kernels: development files
Headers of kjit (C++20), its CMake package (find_package(kjit), target
kjit::kjit) and its pkg-config file (pkg-config --cflags --libs kjit).")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS "libkjit-host0")
if(TARGET kjit_host)
  list(APPEND CPACK_COMPONENTS_ALL host)
  set(CPACK_DEBIAN_HOST_PACKAGE_NAME libkjit-host0)
  set(CPACK_DEBIAN_HOST_PACKAGE_SECTION libs)
  # libkjit_host.so talks to libkjit through a private interface checked by version: the same build.
  set(CPACK_DEBIAN_HOST_PACKAGE_DEPENDS "libkjit0 (= ${KJIT_DEB_VERSION})")
  set(CPACK_DEBIAN_HOST_PACKAGE_CONTROL_EXTRA ${kjit_deb_scripts}/postinst ${kjit_deb_scripts}/postrm)
  set(CPACK_DEBIAN_HOST_PACKAGE_CONTROL_STRICT_PERMISSION ON)
  set(CPACK_DEBIAN_HOST_DESCRIPTION "JIT runtime for GPU kernels: host back end (LLVM 19)
Runs kjit's kernels on host arrays on every core, compiled by LLVM 19.
libkjit loads it on first use of a host array; without it kjit works on the GPU
and says how to install this package when a host array is used.")
endif()
if(TARGET kjit_cli)
  list(APPEND CPACK_COMPONENTS_ALL tools)
  set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME kjit-tools)
  set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION devel)
  set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "libkjit0 (>= ${KJIT_DEB_VERSION})")
  set(CPACK_DEBIAN_TOOLS_PACKAGE_SUGGESTS "libkjit-host0")
  set(CPACK_DEBIAN_TOOLS_DESCRIPTION "JIT runtime for GPU kernels: the kjit command-line program
kjit info, check, source, compile, precompile (a kernel cache built ahead of
time, no GPU needed), cache upkeep, run (a kernel on .npy files), demo and
bench.")
endif()

# Each package's /usr/share/doc/PACKAGE: copyright and changelog.Debian.gz (Debian policy 12.5 and
# 12.7). Only in the packages: `cmake --install` without a component leaves them out.
set(kjit_changelog ${PROJECT_BINARY_DIR}/packaging/changelog.Debian)
configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/changelog.in ${kjit_changelog} @ONLY)
find_program(KJIT_GZIP gzip)
if(KJIT_GZIP)
  # -n: no name or time stamp in the archive, so that the package is reproducible.
  execute_process(COMMAND ${KJIT_GZIP} -9 -n -f -k ${kjit_changelog} RESULT_VARIABLE kjit_gzip_rc)
  if(NOT kjit_gzip_rc EQUAL 0)
    message(WARNING "kjit: gzip failed (${kjit_gzip_rc}): the packages lack changelog.Debian.gz")
  endif()
endif()
foreach(component IN LISTS CPACK_COMPONENTS_ALL)
  string(TOUPPER ${component} upper)
  set(doc_dir ${CMAKE_INSTALL_DATAROOTDIR}/doc/${CPACK_DEBIAN_${upper}_PACKAGE_NAME})
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/debian/copyright DESTINATION ${doc_dir}
          COMPONENT ${component} EXCLUDE_FROM_ALL)
  if(EXISTS ${kjit_changelog}.gz)
    install(FILES ${kjit_changelog}.gz DESTINATION ${doc_dir} COMPONENT ${component} EXCLUDE_FROM_ALL)
  endif()
endforeach()

include(CPack)

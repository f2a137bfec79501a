# Debian packages with CPack (`cpack -G DEB` in the build folder), as three components:
#   libaccrue          the shared library (Debian's dependencies found by dpkg-shlibdeps, and
#                      OpenBLAS, which the library loads with dlopen)
#   libaccrue-dev      headers, the CMake package (find_package(accrue)) and accrue.pc
#   accrue-examples    the example programs, in libexec/accrue/examples
#   libaccrue-cuda     the CUDA backend (libaccrue_cuda.so, which libaccrue loads when a CUDA device
#                      is asked for), in builds with it; CUDA's libraries are NVIDIA's, not Debian's,
#                      so its dependencies on them are not declared
# tests/install/check_packages.sh builds them, unpacks them into a fresh root and builds a program
# against them both ways.

file(RELATIVE_PATH ACCRUE_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file(framework/cmake/accrue.pc.in "${CMAKE_BINARY_DIR}/accrue.pc" @ONLY)
install(FILES "${CMAKE_BINARY_DIR}/accrue.pc" DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT development)

set(CPACK_PACKAGE_NAME accrue)
set(CPACK_PACKAGE_VENDOR "Accrue")
set(CPACK_PACKAGE_CONTACT "Accrue developers <accrue@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DIRECTORY "${CMAKE_BINARY_DIR}/packages")
set(CPACK_COMPONENTS_ALL runtime development examples)
if(ACCRUE_WITH_CUDA)
  list(APPEND CPACK_COMPONENTS_ALL cuda)
endif()
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_COMPONENT_DEVELOPMENT_DEPENDS runtime)
set(CPACK_COMPONENT_EXAMPLES_DEPENDS runtime)
set(CPACK_COMPONENT_CUDA_DEPENDS runtime)
# The libraries each package's programs and libraries link, as Debian's package names; this
# project's own library, beside them in the build folder, is the runtime component's.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${CMAKE_BINARY_DIR}")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libaccrue)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "libopenblas0 | libopenblas0-pthread | libopenblas0-openmp")
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libaccrue-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
# What the installed headers include, and what accrue.pc requires.
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS "libfmt-dev, librange-v3-dev")
set(CPACK_DEBIAN_CUDA_PACKAGE_NAME libaccrue-cuda)
set(CPACK_DEBIAN_CUDA_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_EXAMPLES_PACKAGE_NAME accrue-examples)
set(CPACK_DEBIAN_EXAMPLES_PACKAGE_SECTION science)
set(CPACK_DEBIAN_EXAMPLES_PACKAGE_RECOMMENDS "dataset-fashion-mnist, fortunes")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS "libaccrue-cuda")
include(CPack)

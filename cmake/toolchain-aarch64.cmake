# toolchain-aarch64.cmake: cross build of opperf for arm64 (aarch64) on a Debian x86-64 host,
# with Debian's cross compiler (gcc-aarch64-linux-gnu) and the multiarch :arm64 libraries
# (libpfm4-dev:arm64, libopenblas-openmp-dev:arm64, libelf-dev:arm64, libcjson-dev:arm64,
# libcmocka-dev:arm64). Tests run through qemu-user (CMAKE_CROSSCOMPILING_EMULATOR).
# Used by scripts/test-arm64.sh:  cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Multiarch: the arm64 libraries live in the host's /usr/lib/aarch64-linux-gnu and their headers
# in /usr/include (plus /usr/include/aarch64-linux-gnu), so the "sysroot" is the host's / and
# only the architecture directory tells them apart. Never take an x86-64 library: search the
# library paths of the target architecture only.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_IGNORE_PATH /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/include/x86_64-linux-gnu)

# pkg-config reads the arm64 .pc files only (cjson, cmocka).
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# Run the arm64 test binaries with qemu-user. With libc6:arm64 installed (a dependency of the
# :arm64 -dev packages) the arm64 dynamic loader is /lib/ld-linux-aarch64.so.1 on the host, and
# it finds the arm64 libraries through the host's ld.so.cache (multiarch directories), so no
# -L prefix is needed; QEMU_LD_PREFIX is left unset.
find_program(OPPERF_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${OPPERF_QEMU_AARCH64})

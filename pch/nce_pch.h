// The precompiled header of the libraries with many files (engine, losses, nn, data, the CUDA
// backend's host-run build) and of the test suites: meson compiles it once per target
// (cpp_pch) and every file of the target starts from it, instead of parsing these headers
// again, about a second a file. Only the standard library, {fmt} and oneTBB belong here:
// headers that nearly every file includes and that never change. Nothing of nce's own (a
// change to it would rebuild every file), and nothing that compiles code into each file that
// includes it: CLI11 compiles its validators and help formatter into every such file.
// (No #pragma once: the compiler reads this file only as the header it precompiles.)

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <tbb/parallel_for.h>

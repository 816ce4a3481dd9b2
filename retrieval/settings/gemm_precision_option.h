// --gemm-precision float32|bfloat16: the precision of float32 GEMMs for a command's run
// (nce bench loss, bench step), engine-wide (engine/gemm_precision.h). Not given, the
// engine's own setting stands (NCE_GEMM_PRECISION, default float32). bfloat16 is a mode of
// the CPU backend's GEMMs, so with --device cuda it is one error line, as is a bad name.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "engine/dtype.h"
#include "engine/error.h"
#include "engine/gemm_precision.h"

namespace nce::retrieval {

inline constexpr const char* kGemmPrecisionHelp =
    "float32 (default) or bfloat16: float32 GEMMs round their operands to bfloat16 and accumulate in float32 "
    "(oneDNN; CPU only)";

// Sets the precision `name` names ("" keeps the engine's) before the command computes.
inline void apply_gemm_precision(const std::string& name, Device device) {
    if (name.empty()) return;
    GemmPrecision precision = parse_gemm_precision(name);
    NCE_CHECK(precision == GemmPrecision::Float32 || device == Device::CPU,
              "--gemm-precision bfloat16 applies to the CPU backend's GEMMs; run it with --device cpu");
    set_gemm_precision(precision);
}

// What a benchmark line says about its GEMMs: the precision, and oneDNN's ISA for the
// bfloat16 ones.
inline void add_gemm_precision_fields(nlohmann::ordered_json& line) {
    line["gemm_precision"] = gemm_precision_name(gemm_precision());
    line["onednn_isa"] = onednn_cpu_isa();
}

}  // namespace nce::retrieval

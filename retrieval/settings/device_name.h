// --device cpu|cuda: the device a command computes on (nce bench loss, bench step, encode,
// and the retrieval apps' RunConfig field `device`).
//
// `nce` registers the CUDA backend at start-up when its build has one (apps/nce.cpp); on a
// machine without a GPU, or in a build without the CUDA toolkit, Device::CUDA has no backend
// and require_device("cuda") stops the command with one line before it writes anything:
//
//   --device cuda: no cuda device: the CUDA runtime finds no GPU (...); run with --device cpu
#pragma once
#include <string>

#include "engine/dtype.h"

namespace nce::retrieval {

// The device `name` names: "cpu" or "cuda"; any other name is one error line naming the two.
Device parse_device_name(const std::string& name);

// The device `name` names, checked to have a backend now: for "cuda", the reason there is
// none (backend_for's own words) as one error line ending "run with --device cpu".
Device require_device(const std::string& name);

}  // namespace nce::retrieval

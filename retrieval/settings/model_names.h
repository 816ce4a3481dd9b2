// A pretrained model by name: `--init multilingual-e5-small` reads the folder that
// `bash scripts/pretrained.sh multilingual-e5-small` put in nce's cache,
//
//   $NCE_CACHE/models/<name>/      (NCE_CACHE default: $XDG_CACHE_HOME/nce, else ~/.cache/nce)
//
// A path that exists, or that has a '/', is taken as the path it is.
#pragma once
#include <string>

namespace nce::retrieval {

// `model` itself when it is a path; else the cached folder of that name. A name that is neither
// is one error line saying how to install it.
std::string resolve_model_name(const std::string& model, const char* flag);

}  // namespace nce::retrieval

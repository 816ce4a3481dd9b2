// A pretrained model's name -> its folder in nce's cache (model_names.h).
#include "retrieval/settings/model_names.h"

#include <cstdlib>
#include <filesystem>

#include "engine/error.h"
#include "engine/message_text.h"

namespace nce::retrieval {
namespace {

namespace fs = std::filesystem;

// scripts/cache_dir.sh's folder, found the same way.
fs::path cache_folder() {
    if (const char* cache = std::getenv("NCE_CACHE"); cache && *cache) return cache;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "nce";
    const char* home = std::getenv("HOME");
    return fs::path(home && *home ? home : ".") / ".cache" / "nce";
}

}  // namespace

std::string resolve_model_name(const std::string& model, const char* flag) {
    std::error_code error;
    if (model.empty() || fs::exists(model, error) || model.find('/') != std::string::npos || model == "." ||
        model == "..")
        return model;
    const fs::path cached = cache_folder() / "models" / model;
    NCE_CHECK(fs::is_directory(cached, error),
              "{} {}: no such file or folder, and no model of that name in {} (bash scripts/pretrained.sh {} installs "
              "it; --list names the known ones)", flag, quoted_for_message(model, 80), (cache_folder() / "models").string(),
              quoted_for_message(model, 80));
    return cached.string();
}

}  // namespace nce::retrieval

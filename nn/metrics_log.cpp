#include "nn/metrics_log.h"

#include <cerrno>
#include <cstring>

#include "engine/error.h"

namespace nce::nn {

MetricsLog::MetricsLog(const std::string& path, bool append)
    : path_(path), file_(path, append ? std::ios::app : std::ios::trunc) {
    NCE_CHECK(file_.is_open(), "metrics log: cannot open '{}' for writing ({}); check the directory exists", path,
              std::strerror(errno));
}

void MetricsLog::write(const nlohmann::json& record) {
    if (!enabled()) return;
    file_ << record.dump() << '\n';
    file_.flush();
    NCE_CHECK(file_.good(), "metrics log: writing '{}' failed (disk full?)", path_);
}

}  // namespace nce::nn

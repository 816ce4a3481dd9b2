// The metrics log of a training run: a JSON-lines file, one JSON object per line (one per
// step, one per evaluation). Each line is flushed as it is written, so a run that stops
// for any reason leaves only complete lines, and tools can follow the file while it grows.
#pragma once
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace nce::nn {

class MetricsLog {
public:
    // A log that writes nothing (no path given).
    MetricsLog() = default;
    // Opens `path`, truncating it, or appending to it when `append` (a resumed run).
    // Throws nce::Error naming the path when it cannot be opened.
    MetricsLog(const std::string& path, bool append);

    bool enabled() const { return file_.is_open(); }
    // Writes one object as one line. NaN and infinities are written as null (JSON has none).
    void write(const nlohmann::json& record);

private:
    std::string path_;
    std::ofstream file_;
};

}  // namespace nce::nn

// Where a run writes its files when it runs on several processes: only rank 0 writes the
// run's own folder; every other rank, which runs the same code, writes what it must (a
// tokenizer it trains, generated data, its own checkpoints) into a private scratch folder
// that is removed when the run ends. No two processes ever write the same file.
#pragma once
#include <string>

namespace nce::distributed {

class RankOutputFolder {
public:
    // `output` on rank 0 (and in a one-process world); elsewhere a fresh folder
    // <system temp>/nce-rank-<rank>-<process id>.
    explicit RankOutputFolder(const std::string& output);
    // Removes the scratch folder (never rank 0's output).
    ~RankOutputFolder();
    RankOutputFolder(const RankOutputFolder&) = delete;
    RankOutputFolder& operator=(const RankOutputFolder&) = delete;

    const std::string& path() const { return path_; }

private:
    std::string path_;
    bool is_scratch_ = false;
};

}  // namespace nce::distributed

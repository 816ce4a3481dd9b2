#include "distributed/rank_output_folder.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "distributed/world.h"

namespace nce::distributed {

RankOutputFolder::RankOutputFolder(const std::string& output) : path_(output) {
    if (is_main_rank()) return;
    std::filesystem::path scratch = std::filesystem::temp_directory_path() /
                                    ("nce-rank-" + std::to_string(world().rank()) + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(scratch);
    path_ = scratch.string();
    is_scratch_ = true;
}

RankOutputFolder::~RankOutputFolder() {
    if (!is_scratch_) return;
    std::error_code ignored;  // a folder left behind in the temp directory is no reason to fail a run
    std::filesystem::remove_all(path_, ignored);
}

}  // namespace nce::distributed

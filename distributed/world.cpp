#include "distributed/world.h"

#include <fmt/core.h>

#include <cstdlib>
#include <exception>

#ifdef NCE_HAVE_MPI
#include <mpi.h>
#endif

namespace nce::distributed {

namespace {

World& mutable_world() {
    static World the_world;
    return the_world;
}

// Terminate handler: an exception nobody caught (or std::terminate for another reason)
// ends every rank instead of leaving the others in a collective.
[[noreturn, maybe_unused]] void abort_on_terminate() {
    std::string message = "terminated";
    if (std::exception_ptr current = std::current_exception()) {
        try {
            std::rethrow_exception(current);
        } catch (const std::exception& error) {
            message = error.what();
        } catch (...) {
            message = "terminated by an exception that is not a std::exception";
        }
    }
    abort_world(message);
}

}  // namespace

const World& world() { return mutable_world(); }

bool is_main_rank() { return world().is_main(); }

bool mpi_compiled_in() {
#ifdef NCE_HAVE_MPI
    return true;
#else
    return false;
#endif
}

bool started_by_mpi_launcher() {
    for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_PROCID"})
        if (std::getenv(variable) != nullptr) return true;
    return false;
}

WorldSession::WorldSession(int& argc, char**& argv, Mode mode) {
#ifdef NCE_HAVE_MPI
    if (mode == Mode::WhenLaunched && !started_by_mpi_launcher()) return;
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) return;
    // Only the main thread calls MPI; oneTBB and OpenBLAS threads never do.
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    World& the_world = mutable_world();
    MPI_Comm_rank(MPI_COMM_WORLD, &the_world.rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &the_world.size_);
    the_world.uses_mpi_ = true;
    std::set_terminate(abort_on_terminate);
#else
    (void)argc;
    (void)argv;
    // Several copies started by mpirun, each believing it is the only process, would all
    // write the same files: stop them with the fix instead.
    const char* launched_size = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (launched_size == nullptr) launched_size = std::getenv("PMI_SIZE");
    if (mode == Mode::WhenLaunched && launched_size != nullptr && std::atoi(launched_size) > 1) {
        fmt::print(stderr, "nce: error: started as one of {} processes by an MPI launcher, but this build has no MPI; "
                   "install libopenmpi-dev and reconfigure with -Dmpi=enabled, or run one process\n", launched_size);
        std::exit(1);
    }
#endif
}

WorldSession::~WorldSession() {
#ifdef NCE_HAVE_MPI
    World& the_world = mutable_world();
    if (!the_world.uses_mpi_) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
    the_world = World();
#endif
}

void abort_world(const std::string& message, int exit_code) {
    const World& the_world = world();
    if (the_world.size() > 1)
        fmt::print(stderr, "nce: error: rank {} of {}: {}\n", the_world.rank(), the_world.size(), message);
    else
        fmt::print(stderr, "nce: error: {}\n", message);
    std::fflush(stderr);
#ifdef NCE_HAVE_MPI
    if (the_world.uses_mpi() && the_world.size() > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
#endif
    std::exit(exit_code);
}

}  // namespace nce::distributed

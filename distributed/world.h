// The world: the processes of one data-parallel run, numbered 0 .. size-1 (their ranks).
//
// `mpirun -np K nce ...` starts K copies of a program; each one opens a WorldSession at the
// top of main, which joins MPI when the program was started by an MPI launcher and does
// nothing otherwise. world() then answers which process this is. Without MPI (not built
// with it, or not started by a launcher) the world is one process of rank 0, and every
// collective in distributed/ is the identity, so the same code runs on one process.
//
// Failure: a rank that stops with an error while the others wait in a collective would
// leave them waiting forever. abort_world() prints the error, naming the rank, and calls
// MPI_Abort, which ends every process of the run; `nce` calls it for any error when the
// world has more than one process, and WorldSession installs it as the terminate handler.
#pragma once
#include <string>

namespace nce::distributed {

class World {
public:
    int rank() const { return rank_; }
    int size() const { return size_; }
    // Rank 0 prints progress and writes checkpoints and logs; the others stay silent.
    bool is_main() const { return rank_ == 0; }
    // True while this process is part of an MPI run (a session with MPI is open).
    bool uses_mpi() const { return uses_mpi_; }

private:
    friend class WorldSession;
    int rank_ = 0;
    int size_ = 1;
    bool uses_mpi_ = false;
};

// This process's world: one process of rank 0 until a WorldSession joins MPI.
const World& world();
// Shorthand for world().is_main().
bool is_main_rank();

// True when this build has MPI (the meson option `mpi` found it).
bool mpi_compiled_in();
// True when an MPI launcher (mpirun, mpiexec, srun) started this process: it set the
// environment variables OpenMPI, MPICH or PMIx give every rank.
bool started_by_mpi_launcher();

// Joins MPI for as long as it lives (MPI_Init ... MPI_Finalize). One per process, at the
// top of main, before any thread is started.
class WorldSession {
public:
    enum class Mode {
        WhenLaunched,  // join MPI only when started by a launcher (what `nce` does)
        Always,        // join MPI whenever it is compiled in (a one-process MPI run otherwise)
    };
    WorldSession(int& argc, char**& argv, Mode mode = Mode::WhenLaunched);
    ~WorldSession();
    WorldSession(const WorldSession&) = delete;
    WorldSession& operator=(const WorldSession&) = delete;
};

// Prints "nce: error: rank R of K: <message>" to stderr and ends the whole run: MPI_Abort
// when the world has more than one process (no rank is left waiting), else exit.
[[noreturn]] void abort_world(const std::string& message, int exit_code = 1);

}  // namespace nce::distributed

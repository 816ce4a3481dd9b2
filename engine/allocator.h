// A caching allocator: freed buffers are kept in free lists by size class and handed back
// out to the next request of that class, so a training step reuses the memory the previous
// step touched instead of faulting in fresh pages (on these machines writing fresh memory
// runs at about 2.3 GB/s against 33 GB/s for memory already touched).
//
// Size classes: four per power of two (1, 1.25, 1.5, 1.75 times 2^k), at least 64 bytes, so
// a buffer wastes under a quarter of its size. Host buffers are 64-byte aligned.
//
// What it holds (in use + cached) stays within kHeldLimit times the most it ever had in use
// at once. A workload of fixed shapes needs every block again each step, one block per class
// for each one in use at once; the phases of a step peak in different classes, so that sum is
// above the step's peak: all-MiniLM-L6-v2's bench encode (64 x 128) needs 1.5-2 times it (at
// 1.5 it missed 156 blocks a step, faulting in fresh pages: 850 against 640 ms), and its bench
// step about 1.2. One whose shapes vary (batches padded to their longest text) would keep idle
// blocks of every class it ever used (fine-tuning it on beer: 5596 MiB cached for a peak of
// 2386). When fresh memory would take it past the limit, idle blocks go back to the system
// first, those of the classes asked for longest ago.
//
// The same class serves device memory: it is built over the device's own two calls
// (engine/cuda/ passes cudaMalloc and cudaFree), and only those differ.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace nce {

struct AllocatorStats {
    std::size_t bytes_in_use = 0;     // handed out and not yet released
    std::size_t bytes_cached = 0;     // released and kept for reuse
    std::size_t peak_bytes_in_use = 0;
    std::size_t allocations = 0;      // requests served
    std::size_t cache_hits = 0;       // requests served from the cache
};

class CachingAllocator {
public:
    // Where fresh memory comes from: `allocate` returns nullptr when the system is out of
    // memory (bytes is a multiple of 64); `free` takes back what `allocate` gave.
    struct System {
        void* (*allocate)(std::size_t bytes);
        void (*free)(void* pointer);
    };
    explicit CachingAllocator(System system) : system_(system) {}

    // The process-wide allocator for host memory.
    static CachingAllocator& host();

    void* allocate(std::size_t bytes);
    // Never throws (storage is released from destructors): a block it cannot keep goes back
    // to the system.
    void release(void* pointer, std::size_t bytes) noexcept;

    AllocatorStats stats() const;
    void reset_peak();
    // Returns every cached buffer to the system.
    void empty_cache();

    static std::size_t size_class(std::size_t bytes);
    static constexpr double kHeldLimit = 2.0;

    ~CachingAllocator();

private:
    struct SizeClass {
        std::vector<void*> free;          // cached blocks of this class
        std::uint64_t last_request = 0;   // the request count when one was last asked for
    };
    // Takes cached blocks off their lists until what is held fits the limit; the caller
    // gives them back to the system outside the lock.
    std::vector<std::pair<void*, std::size_t>> evict_over_limit();

    System system_;
    mutable std::mutex mutex_;
    std::map<std::size_t, SizeClass> classes_;
    AllocatorStats stats_;
    std::size_t most_in_use_ = 0;  // the high-water mark of bytes in use, never reset
};

}  // namespace nce

#include "engine/allocator.h"

#include <bit>
#include <cstdlib>
#include <new>

#include "engine/error.h"

namespace nce {

namespace {

void* aligned_host_allocate(std::size_t bytes) { return std::aligned_alloc(64, bytes); }
void host_free(void* pointer) { std::free(pointer); }

}  // namespace

CachingAllocator& CachingAllocator::host() {
    static CachingAllocator* allocator = new CachingAllocator({aligned_host_allocate, host_free});  // lives until exit
    return *allocator;
}

std::size_t CachingAllocator::size_class(std::size_t bytes) {
    if (bytes <= 64) return 64;
    // Largest power of two not above bytes, then round up to the next quarter step.
    std::size_t power = std::bit_floor(bytes);
    std::size_t quarter = power / 4;
    return (bytes + quarter - 1) / quarter * quarter;
}

void* CachingAllocator::allocate(std::size_t bytes) {
    std::size_t rounded = size_class(bytes);
    {
        std::lock_guard lock(mutex_);
        stats_.allocations++;
        stats_.bytes_in_use += rounded;
        stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
        auto it = free_lists_.find(rounded);
        if (it != free_lists_.end() && !it->second.empty()) {
            void* pointer = it->second.back();
            it->second.pop_back();
            stats_.bytes_cached -= rounded;
            stats_.cache_hits++;
            return pointer;
        }
    }
    // aligned_alloc wants a size that is a multiple of the alignment; the classes below 256
    // bytes (80, 96, 112, 160, 224) are not, so ask for the next multiple of 64.
    std::size_t aligned_bytes = (rounded + 63) / 64 * 64;
    void* pointer = system_.allocate(aligned_bytes);
    if (pointer == nullptr) {
        // Give the cache back to the system and try once more before giving up.
        empty_cache();
        pointer = system_.allocate(aligned_bytes);
    }
    if (pointer == nullptr) {
        std::lock_guard lock(mutex_);
        stats_.bytes_in_use -= rounded;
        fail("out of memory: could not allocate {} bytes ({:.2f} GiB)", rounded, static_cast<double>(rounded) / (1 << 30));
    }
    return pointer;
}

void CachingAllocator::release(void* pointer, std::size_t bytes) noexcept {
    if (pointer == nullptr) return;
    std::size_t rounded = size_class(bytes);
    std::lock_guard lock(mutex_);
    stats_.bytes_in_use -= rounded;
    try {  // remembering the block takes memory too; out of it, the system takes the block back
        free_lists_[rounded].push_back(pointer);
        stats_.bytes_cached += rounded;
    } catch (const std::bad_alloc&) {
        system_.free(pointer);
    }
}

AllocatorStats CachingAllocator::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

void CachingAllocator::reset_peak() {
    std::lock_guard lock(mutex_);
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

void CachingAllocator::empty_cache() {
    std::lock_guard lock(mutex_);
    for (auto& [size, pointers] : free_lists_)
        for (void* pointer : pointers) system_.free(pointer);
    free_lists_.clear();
    stats_.bytes_cached = 0;
}

CachingAllocator::~CachingAllocator() { empty_cache(); }

}  // namespace nce

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
    std::vector<std::pair<void*, std::size_t>> evicted;
    {
        std::lock_guard lock(mutex_);
        stats_.allocations++;
        stats_.bytes_in_use += rounded;
        stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
        most_in_use_ = std::max(most_in_use_, stats_.bytes_in_use);
        SizeClass& size = classes_[rounded];
        size.last_request = stats_.allocations;
        if (!size.free.empty()) {
            void* pointer = size.free.back();
            size.free.pop_back();
            stats_.bytes_cached -= rounded;
            stats_.cache_hits++;
            return pointer;
        }
        evicted = evict_over_limit();
    }
    for (auto [pointer, size] : evicted) system_.free(pointer);
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

std::vector<std::pair<void*, std::size_t>> CachingAllocator::evict_over_limit() {
    std::vector<std::pair<void*, std::size_t>> evicted;
    const double limit = kHeldLimit * static_cast<double>(most_in_use_);
    while (stats_.bytes_cached > 0 && static_cast<double>(stats_.bytes_in_use + stats_.bytes_cached) > limit) {
        SizeClass* oldest = nullptr;
        std::size_t oldest_size = 0;
        for (auto& [size, entry] : classes_)
            if (!entry.free.empty() && (oldest == nullptr || entry.last_request < oldest->last_request)) {
                oldest = &entry;
                oldest_size = size;
            }
        // Every cached block of the oldest class goes; the loop stops as soon as it fits.
        while (!oldest->free.empty() && static_cast<double>(stats_.bytes_in_use + stats_.bytes_cached) > limit) {
            evicted.emplace_back(oldest->free.back(), oldest_size);
            oldest->free.pop_back();
            stats_.bytes_cached -= oldest_size;
        }
    }
    return evicted;
}

void CachingAllocator::release(void* pointer, std::size_t bytes) noexcept {
    if (pointer == nullptr) return;
    std::size_t rounded = size_class(bytes);
    std::lock_guard lock(mutex_);
    stats_.bytes_in_use -= rounded;
    try {  // remembering the block takes memory too; out of it, the system takes the block back
        classes_[rounded].free.push_back(pointer);
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
    for (auto& [size, entry] : classes_) {
        for (void* pointer : entry.free) system_.free(pointer);
        entry.free.clear();
    }
    stats_.bytes_cached = 0;
}

CachingAllocator::~CachingAllocator() { empty_cache(); }

}  // namespace nce

// What the bench commands report of the process itself: its CPU time and its memory
// high-water mark.
#pragma once

#include <sys/resource.h>

namespace nce::apps {

// CPU time of the whole process (every thread, user + system) so far, in milliseconds. A
// busy machine inflates it far less than the wall clock, which includes waiting for a core.
inline double process_cpu_milliseconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto milliseconds = [](const timeval& t) { return double(t.tv_sec) * 1e3 + double(t.tv_usec) / 1e3; };
    return milliseconds(usage.ru_utime) + milliseconds(usage.ru_stime);
}

// The most memory the process has held resident so far, in MiB.
inline double peak_resident_mebibytes() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace nce::apps

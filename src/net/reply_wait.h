// Whether a caller polls for its RPC reply for a short while before it
// sleeps for it (config `client.reply_wait`: "auto", "poll" or "sleep").
//
// Polling saves the caller's wake-up when the reply comes within the poll
// (rpc_channel.cc); it costs a recv(MSG_PEEK) and a sched_yield per round,
// CPU the server and the other callers on the same cores may need. Which
// wins depends on what a syscall costs on the machine, so "auto" measures
// that once per process. The two machines behind the threshold, measured
// with bench/ab.py (cold 4 GiB set, RAM tiers off, poll vs sleep alternated
// round by round):
//   - syscall ~0.23-0.27 µs (KVM guest, cpuidle haltpoll, 2026-12-06):
//     sleeping lost every row in two runs: native QD1 -28 / -9 %, FUSE QD1
//     -17 / -22 %, psync x 4 -7 / -7 %, mmap x 4 -5 / -5 %;
//   - syscall ~1.1-1.3 µs (PVM guest, 2026-12-06): sleeping won or tied:
//     native QD1 +1 to +12 %, FUSE QD1 +4 to +7 %, psync x 4 +8 to +12 %,
//     mmap x 4 +20 to +22 % (polling made 13 of the FUSE daemon's 17
//     syscalls per read at psync x 4).
//
// Thread-safe.
#pragma once

#include <string_view>

namespace rustfs::net {

// A bare syscall at or below this many ns makes polling pay ("auto").
inline constexpr double kPollingPaysUpToNs = 600;

// The decision "auto" takes for a measured syscall cost (ns).
bool PollingPays(double syscall_ns);

// What a bare syscall (getppid) costs on this machine, in ns: the cheapest
// of a few short batches, so a preemption in one does not count. Takes
// 320 syscalls: 80-400 µs.
double MeasureSyscallNs();

// The decision for a config value ("poll", "sleep", or "auto": measured
// once per process, the first time it is asked, and logged). A value that
// is none of these (ValidateConfig refuses it) sleeps.
bool PollForReplies(std::string_view mode);

}  // namespace rustfs::net

// Buffers a read is about to fill: sized without zeroing them first, which
// costs a pass over memory as long as the copy that fills them (measured:
// zeroing was the fuse daemon's largest cost in a planned training epoch).
// Whoever sizes one writes every byte of it before it is read: bytes past a
// file's or a shard's end are zeroed explicitly where that is the rule,
// never left to the allocation.
//
// Under AddressSanitizer (scripts/sanitize.sh, run in CI) the new bytes are
// filled with 0xA5 instead, so a byte a read forgot to write shows up as
// wrong data in the tests rather than as the zeros fresh memory often holds.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RUSTFS_POISON_UNINIT 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define RUSTFS_POISON_UNINIT 1
#endif

namespace rustfs {

// Resizes s to n bytes; those past its old size are left unwritten.
// The operation returns n, not the size it is handed: libstdc++ 12 hands it
// the grown capacity when the string reallocates (GCC 12's
// resize_and_overwrite passes _M_create's rounded-up size), which would
// make s longer than asked.
inline void ResizeUninitialized(std::string& s, size_t n) {
  s.resize_and_overwrite(n, [old = s.size(), n](char* p, size_t) {
#ifdef RUSTFS_POISON_UNINIT
    if (n > old) std::memset(p + old, 0xA5, n - old);
#else
    (void)p, (void)old;
#endif
    return n;
  });
}

}  // namespace rustfs

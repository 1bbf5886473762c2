// CRC-32C (Castagnoli), the checksum of checkpoint files: chosen over zlib's
// CRC-32 for its better error detection on storage data (and because it is
// what the formats we learn from, TFRecord and LevelDB, use).
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft {

// Extends `crc` (0 to start) over `n` bytes: Crc32c(Crc32c(0, a), b) is the
// checksum of a followed by b.
uint32_t Crc32c(uint32_t crc, const void* data, size_t n);

}  // namespace weft

// Checkpoint files (FORMAT.md): a writer that builds one beside its target
// and renames it into place, and a reader that checks every byte it reads.
// Both stream: a value passes through memory once, in the caller's buffer.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "checkpoint/crc32c.h"
#include "tensor/dims.h"
#include "weft/dtype.h"
#include "weft/status.h"
#include "weft/tensor.h"

namespace weft {

// What a record can hold (FORMAT.md).  The writer refuses, before writing
// anything, every entry the reader would refuse: a file that cannot be
// read back must never replace one that can.
constexpr uint32_t kCheckpointMaxNameBytes = 65535;
constexpr uint32_t kCheckpointMaxRank = WEFT_MAX_RANK;

// The description of one stored value, as a record's header holds it.
struct CheckpointEntry {
  std::string name;
  weft_dtype dtype = WEFT_DTYPE_INVALID;
  Dims dims;
  uint64_t bytes = 0;
};

// Why `entry` cannot be stored (its name's length, its rank, its dtype, a
// byte count that disagrees with dtype and dims), or "" when it can.
std::string CheckpointEntryProblem(const CheckpointEntry& entry);

class CheckpointWriter {
 public:
  CheckpointWriter() = default;
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;
  // Removes the temporary file unless Commit() succeeded.
  ~CheckpointWriter();

  // Checks the entries to be written (INVALID_ARGUMENT naming the first
  // the reader would refuse) and that `path` is absent or a regular file
  // (FAILED_PRECONDITION), then creates the temporary file beside `path`
  // and writes the header.
  weft_status* Open(const std::string& path,
                    const std::vector<CheckpointEntry>& entries);
  // Appends the next record: entries[k] of Open's for the k-th call;
  // `data` holds entry.bytes bytes.
  weft_status* Add(const CheckpointEntry& entry, const void* data);
  // Writes the end marker, flushes the file to disk, renames it over the
  // target and flushes the directory.
  weft_status* Commit();

 private:
  weft_status* Write(const void* data, size_t n);
  // Writes `n` bytes of `data`, flushes, and never returns: the test hook.
  [[noreturn]] void PauseForTest(const void* data, size_t n);
  weft_status* IoError(const char* what, int err) const;

  std::string path_;
  std::string temp_;
  FILE* file_ = nullptr;
  std::vector<CheckpointEntry> entries_;  // as Open checked them
  uint64_t declared_ = 0;
  uint64_t added_ = 0;
  uint64_t written_ = 0;
  uint32_t chain_ = 0;  // the end marker's checksum of the record checksums
  uint64_t pause_after_ = UINT64_MAX;  // the test hook, see FORMAT.md
  bool committed_ = false;
};

class CheckpointReader {
 public:
  CheckpointReader() = default;
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;
  ~CheckpointReader();

  // Opens `path` and checks its preamble and header.
  weft_status* Open(const std::string& path);
  uint64_t num_records() const { return declared_; }
  // Reads and checks the next record's header.
  weft_status* Next(CheckpointEntry* out);
  // Reads the data of the record Next() returned into `dst` (entry.bytes
  // bytes), or reads past it when `dst` is null; checks it either way.
  weft_status* ReadData(void* dst);
  // Checks the end marker and that nothing follows it.
  weft_status* Finish();

  // "checkpoint '<path>'", the prefix of every message about the file.
  std::string Where() const;

 private:
  weft_status* Read(void* dst, uint64_t n, const char* what);
  weft_status* Corrupt(const std::string& what) const;

  std::string path_;
  FILE* file_ = nullptr;
  uint64_t size_ = 0;
  uint64_t offset_ = 0;
  uint64_t declared_ = 0;
  uint64_t seen_ = 0;
  uint64_t pending_bytes_ = 0;  // data of the record Next() returned
  bool pending_ = false;
  uint32_t pending_header_crc_ = 0;
  std::string pending_name_;
  uint32_t chain_ = 0;  // the records' checksums so far, as the end marker's
  std::unordered_set<std::string> names_;
};

// The status for a failed system call `what` on `path`, with the code that
// fits errno `err` (NOT_FOUND, PERMISSION_DENIED, RESOURCE_EXHAUSTED, ...).
weft_status* OsError(int err, const std::string& what, const std::string& path);

// What kind of file `mode` is, for messages: "a directory", "a FIFO", ...
const char* FileKind(unsigned mode);

// Opens `path` for reading without blocking (opening a FIFO would wait for
// a writer): regular files only, FAILED_PRECONDITION "<where> is not a
// regular file: it is a FIFO" otherwise; OS errors name `kind` ("cannot
// open checkpoint '<path>'").  The caller closes *out_fd.  (Checkpoints,
// model files.)
weft_status* OpenRegularForReading(const std::string& path,
                                   const std::string& where, const char* kind,
                                   int* out_fd, uint64_t* out_size);

// Files written whole or not at all (checkpoints, TFRecord files): the
// writer fills a temporary file beside the target and renames it over the
// target once it is flushed to disk.
//
// Refuses a `path` that exists and is not a regular file
// (FAILED_PRECONDITION: the rename would replace a FIFO or a device node,
// or fail on a directory only after everything was written), then creates
// the temporary "<path>.weft-tmp.<pid>.<n>", a name no other writer in this
// process or another uses, so a temporary a crash left behind is never
// reopened.  Sets *temp (left empty on failure) and *out_fd, which the
// caller closes.  Messages are not prefixed: callers say what they save.
weft_status* CreateTempBeside(const std::string& path, std::string* temp,
                              int* out_fd);
// Renames `temp`, which the caller has written, flushed to disk and closed,
// over `path`, then flushes the directory, without which the rename itself
// may not survive a power cut.
weft_status* RenameIntoPlace(const std::string& temp, const std::string& path);

// Little-endian fields of the checksummed file formats (checkpoints, graph
// files): appended in host order, which the formats require to be little-
// endian, with the CRC-32C of what was appended.
struct LeBytes {
  std::vector<unsigned char> b;
  template <typename T>
  void Put(T v) {
    const auto* p = reinterpret_cast<const unsigned char*>(&v);
    b.insert(b.end(), p, p + sizeof v);
  }
  void Put(const void* p, size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    b.insert(b.end(), c, c + n);
  }
  uint32_t Crc() const { return Crc32c(0, b.data(), b.size()); }
};

template <typename T>
T GetLe(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace weft

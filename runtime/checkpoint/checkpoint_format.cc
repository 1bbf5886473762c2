// Writing and reading the checkpoint format of FORMAT.md (version 1).
#include "checkpoint/checkpoint_format.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <unordered_set>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "base/status.h"
#include "checkpoint/crc32c.h"
#include "tensor/tensor_value.h"

// Integers are stored little-endian and copied to and from memory as they
// are: a big-endian host would need byte swaps here.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the checkpoint code assumes a little-endian host");

namespace weft {
namespace {

constexpr char kMagic[8] = {'W', 'E', 'F', 'T', 'C', 'K', 'P', 'T'};
constexpr char kEndTag[8] = {'W', 'E', 'F', 'T', 'E', 'N', 'D', '\0'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kRecordTag = 0x43455256;  // "VREC"

// A little-endian byte string under construction.
uint32_t ChainStep(uint32_t chain, uint32_t header_crc, uint32_t data_crc) {
  uint32_t pair[2] = {header_crc, data_crc};
  return Crc32c(chain, pair, sizeof pair);
}

// The test hook: WEFT_CHECKPOINT_TEST_PAUSE_AFTER_BYTES=N makes a writer
// stop for good once N bytes of its temporary file are on disk, so a test
// can kill it mid-write.  Debugging only; see FORMAT.md.
uint64_t PauseAfterBytes() {
  const char* e = getenv("WEFT_CHECKPOINT_TEST_PAUSE_AFTER_BYTES");
  if (e == nullptr || *e == '\0') return UINT64_MAX;
  char* end = nullptr;
  unsigned long long n = strtoull(e, &end, 10);
  return *end == '\0' ? n : UINT64_MAX;
}

// A name for messages: names may be up to 64 KiB long.
std::string Shown(const std::string& name) {
  constexpr size_t kShown = 64;
  if (name.size() <= kShown) return "'" + name + "'";
  return "'" + name.substr(0, kShown) + "...' (" +
         std::to_string(name.size()) + " bytes)";
}

}  // namespace

const char* FileKind(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Opens `path` for reading without blocking: opening a FIFO would wait for
// a writer.  Regular files only (FAILED_PRECONDITION otherwise).
weft_status* OpenRegularForReading(const std::string& path,
                                   const std::string& where, const char* kind,
                                   int* out_fd, uint64_t* out_size) {
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return OsError(errno, std::string("cannot open ") + kind, path);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return OsError(err, std::string("cannot stat ") + kind, path);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return Error(WEFT_FAILED_PRECONDITION,
                 where + " is not a regular file: it is " +
                     FileKind(st.st_mode));
  }
  // Reads of a regular file never block; the flag only mattered for open.
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    int err = errno;
    close(fd);
    return OsError(err, std::string("cannot read ") + kind, path);
  }
  *out_fd = fd;
  *out_size = static_cast<uint64_t>(st.st_size);
  return nullptr;
}

std::string CheckpointEntryProblem(const CheckpointEntry& e) {
  std::string var = "variable " + Shown(e.name);
  if (e.name.empty() || e.name.size() > kCheckpointMaxNameBytes)
    return var + " has a name of " + std::to_string(e.name.size()) +
           " bytes; a checkpoint holds names of 1.." +
           std::to_string(kCheckpointMaxNameBytes) + " bytes";
  if (e.dims.rank() < 0 ||
      static_cast<uint32_t>(e.dims.rank()) > kCheckpointMaxRank)
    return var + " has rank " + std::to_string(e.dims.rank()) +
           "; a checkpoint holds ranks 0.." +
           std::to_string(kCheckpointMaxRank);
  if (weft_dtype_size(e.dtype) == 0)
    return var + " has unknown dtype " +
           std::to_string(static_cast<int>(e.dtype));
  size_t bytes = 0;
  if (weft_status* st = CheckedByteSize(e.dtype, e.dims.data(), e.dims.rank(),
                                        &bytes)) {
    std::string msg = st->message;
    weft_status_destroy(st);
    return var + ": " + msg;
  }
  if (bytes != e.bytes)
    return var + " declares " + std::to_string(e.bytes) +
           " bytes of data for " + weft_dtype_name(e.dtype) +
           e.dims.ToString() + ", which needs " + std::to_string(bytes);
  return "";
}

weft_status* OsError(int err, const std::string& what,
                     const std::string& path) {
  weft_code code;
  switch (err) {
    case ENOENT: case ENOTDIR: code = WEFT_NOT_FOUND; break;
    case EACCES: case EPERM: case EROFS: code = WEFT_PERMISSION_DENIED; break;
    case ENOSPC: case EDQUOT: case ENOMEM: case EFBIG:
      code = WEFT_RESOURCE_EXHAUSTED; break;
    case EISDIR: code = WEFT_FAILED_PRECONDITION; break;
    default: code = WEFT_UNKNOWN;
  }
  return Error(code, what + " '" + path + "': " + strerror(err));
}

namespace {

// The directory holding `path`, for the fsync that makes a rename durable.
std::string DirectoryOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::atomic<uint64_t> temp_counter{0};

}  // namespace

weft_status* CreateTempBeside(const std::string& path, std::string* temp,
                              int* out_fd) {
  temp->clear();
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return Error(WEFT_FAILED_PRECONDITION,
                 std::string("the path is not a regular file: it is ") +
                     FileKind(st.st_mode));
  std::string name = path + ".weft-tmp." + std::to_string(getpid()) + "." +
                     std::to_string(temp_counter.fetch_add(1));
  int fd = open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0)
    return OsError(errno, "cannot create temporary file",
                   path + ".weft-tmp.*");
  *temp = std::move(name);
  *out_fd = fd;
  return nullptr;
}

weft_status* RenameIntoPlace(const std::string& temp,
                             const std::string& path) {
  if (rename(temp.c_str(), path.c_str()) != 0)
    return OsError(errno, "cannot rename the temporary file over", path);
  std::string dir = DirectoryOf(path);
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return OsError(errno, "cannot open directory", dir);
  int rc = fsync(dfd);
  int err = errno;
  close(dfd);
  if (rc != 0) return OsError(err, "cannot flush directory", dir);
  return nullptr;
}

// ---- Writer -----------------------------------------------------------------

CheckpointWriter::~CheckpointWriter() {
  if (file_ != nullptr) fclose(file_);
  if (!committed_ && !temp_.empty()) unlink(temp_.c_str());
}

weft_status* CheckpointWriter::IoError(const char* what, int err) const {
  return Annotate(OsError(err, what, temp_),
                  "saving checkpoint '" + path_ + "': ");
}

weft_status* CheckpointWriter::Open(
    const std::string& path, const std::vector<CheckpointEntry>& entries) {
  path_ = path;
  std::string saving = "saving checkpoint '" + path + "': ";
  std::unordered_set<std::string> names;
  for (const CheckpointEntry& e : entries) {
    std::string problem = CheckpointEntryProblem(e);
    if (problem.empty() && !names.insert(e.name).second)
      problem = "variable " + Shown(e.name) + " appears twice";
    if (!problem.empty())
      return Error(WEFT_INVALID_ARGUMENT, saving + problem);
  }
  int fd = -1;
  WEFT_RETURN_IF_ERROR(Annotate(CreateTempBeside(path, &temp_, &fd), saving));
  entries_ = entries;
  declared_ = entries.size();
  pause_after_ = PauseAfterBytes();
  file_ = fdopen(fd, "wb");
  if (file_ == nullptr) {
    int err = errno;
    close(fd);
    return IoError("cannot open", err);
  }
  LeBytes pre;
  pre.Put(kMagic, sizeof kMagic);
  pre.Put(kVersion);
  pre.Put(pre.Crc());
  LeBytes header;
  header.Put(declared_);
  header.Put(uint32_t{0});  // flags
  header.Put(header.Crc());
  WEFT_RETURN_IF_ERROR(Write(pre.b.data(), pre.b.size()));
  return Write(header.b.data(), header.b.size());
}

void CheckpointWriter::PauseForTest(const void* data, size_t n) {
  if (n > 0) fwrite(data, 1, n, file_);
  fflush(file_);
  for (;;) pause();  // until the test kills the process
}

weft_status* CheckpointWriter::Write(const void* data, size_t n) {
  if (written_ + n > pause_after_)
    PauseForTest(data, static_cast<size_t>(pause_after_ - written_));
  if (n > 0 && fwrite(data, 1, n, file_) != n) return IoError("cannot write", errno);
  written_ += n;
  return nullptr;
}

weft_status* CheckpointWriter::Add(const CheckpointEntry& entry,
                                   const void* data) {
  if (added_ >= declared_ || !(entry.name == entries_[added_].name &&
                               entry.dtype == entries_[added_].dtype &&
                               entry.dims == entries_[added_].dims &&
                               entry.bytes == entries_[added_].bytes))
    return Errorf(WEFT_INTERNAL,
                  "saving checkpoint '%s': record %llu is not the entry "
                  "declared at Open", path_.c_str(),
                  static_cast<unsigned long long>(added_));
  LeBytes h;
  h.Put(kRecordTag);
  h.Put(static_cast<uint32_t>(entry.name.size()));
  h.Put(entry.name.data(), entry.name.size());
  h.Put(static_cast<uint32_t>(entry.dtype));
  h.Put(static_cast<uint32_t>(entry.dims.rank()));
  for (int32_t i = 0; i < entry.dims.rank(); ++i) h.Put(entry.dims[i]);
  h.Put(entry.bytes);
  uint32_t header_crc = h.Crc();
  h.Put(header_crc);
  uint32_t data_crc = Crc32c(0, data, entry.bytes);
  WEFT_RETURN_IF_ERROR(Write(h.b.data(), h.b.size()));
  WEFT_RETURN_IF_ERROR(Write(data, entry.bytes));
  WEFT_RETURN_IF_ERROR(Write(&data_crc, sizeof data_crc));
  chain_ = ChainStep(chain_, header_crc, data_crc);
  ++added_;
  return nullptr;
}

weft_status* CheckpointWriter::Commit() {
  if (added_ != declared_)
    return Errorf(WEFT_INTERNAL,
                  "saving checkpoint '%s': %llu records declared, %llu added",
                  path_.c_str(), static_cast<unsigned long long>(declared_),
                  static_cast<unsigned long long>(added_));
  LeBytes end;
  end.Put(kEndTag, sizeof kEndTag);
  end.Put(declared_);
  end.Put(chain_);
  end.Put(end.Crc());
  WEFT_RETURN_IF_ERROR(Write(end.b.data(), end.b.size()));
  // The hook may stop a writer that has written everything but not yet
  // renamed: the old checkpoint must survive that too.
  if (written_ >= pause_after_) PauseForTest(nullptr, 0);
  if (fflush(file_) != 0) return IoError("cannot write", errno);
  if (fsync(fileno(file_)) != 0) return IoError("cannot flush to disk", errno);
  FILE* f = std::exchange(file_, nullptr);
  if (fclose(f) != 0) return IoError("cannot close", errno);
  WEFT_RETURN_IF_ERROR(Annotate(RenameIntoPlace(temp_, path_),
                                "saving checkpoint '" + path_ + "': "));
  committed_ = true;
  return nullptr;
}

// ---- Reader -----------------------------------------------------------------

CheckpointReader::~CheckpointReader() {
  if (file_ != nullptr) fclose(file_);
}

std::string CheckpointReader::Where() const {
  return "checkpoint '" + path_ + "'";
}

weft_status* CheckpointReader::Corrupt(const std::string& what) const {
  return Error(WEFT_DATA_LOSS, Where() + " is corrupt: " + what);
}

weft_status* CheckpointReader::Read(void* dst, uint64_t n, const char* what) {
  if (n > size_ - offset_)
    return Errorf(WEFT_DATA_LOSS,
                  "%s is truncated: it ends at byte %llu, inside %s (%llu "
                  "bytes from byte %llu)", Where().c_str(),
                  static_cast<unsigned long long>(size_), what,
                  static_cast<unsigned long long>(n),
                  static_cast<unsigned long long>(offset_));
  if (n > 0 && fread(dst, 1, n, file_) != n)
    return ferror(file_) ? OsError(errno, "cannot read checkpoint", path_)
                         : Errorf(WEFT_DATA_LOSS,
                                  "%s is truncated: it ended while being "
                                  "read, inside %s", Where().c_str(), what);
  offset_ += n;
  return nullptr;
}

weft_status* CheckpointReader::Open(const std::string& path) {
  path_ = path;
  int fd = -1;
  WEFT_RETURN_IF_ERROR(OpenRegularForReading(path, Where(), "checkpoint", &fd, &size_));
  file_ = fdopen(fd, "rb");
  if (file_ == nullptr) {
    int err = errno;
    close(fd);
    return OsError(err, "cannot read checkpoint", path);
  }

  unsigned char pre[16];
  // A file too short to hold the magic is reported as not a checkpoint
  // only when what it holds already differs from the magic.
  uint64_t have = size_ < 8 ? size_ : 8;
  if (have > 0 && fread(pre, 1, have, file_) != have)
    return OsError(errno, "cannot read checkpoint", path);
  if (std::memcmp(pre, kMagic, have) != 0)
    return Error(WEFT_DATA_LOSS,
                 Where() + " is not a Weft checkpoint (bad magic bytes)");
  if (size_ < 8)
    return Error(WEFT_DATA_LOSS,
                 Where() + " is truncated: it ends inside the magic bytes");
  offset_ = 8;
  WEFT_RETURN_IF_ERROR(Read(pre + 8, 8, "the preamble"));
  if (Crc32c(0, pre, 12) != GetLe<uint32_t>(pre + 12))
    return Corrupt("the preamble's checksum does not match");
  uint32_t version = GetLe<uint32_t>(pre + 8);
  if (version != kVersion)
    return Errorf(WEFT_UNIMPLEMENTED,
                  "%s has format version %u, which this library cannot "
                  "read (it reads version %u)", Where().c_str(), version,
                  kVersion);

  unsigned char h[16];
  WEFT_RETURN_IF_ERROR(Read(h, sizeof h, "the header"));
  if (Crc32c(0, h, 12) != GetLe<uint32_t>(h + 12))
    return Corrupt("the header's checksum does not match");
  declared_ = GetLe<uint64_t>(h);
  if (GetLe<uint32_t>(h + 8) != 0)
    return Corrupt("the header sets unknown flags");
  return nullptr;
}

weft_status* CheckpointReader::Next(CheckpointEntry* out) {
  if (pending_) WEFT_RETURN_IF_ERROR(ReadData(nullptr));
  if (seen_ == declared_)
    return Errorf(WEFT_INTERNAL, "%s: reading past the last record",
                  Where().c_str());
  std::string rec = "record " + std::to_string(seen_);
  std::string what = rec + "'s header";
  LeBytes h;
  unsigned char fixed[8];
  WEFT_RETURN_IF_ERROR(Read(fixed, 8, what.c_str()));
  h.Put(fixed, 8);
  if (GetLe<uint32_t>(fixed) != kRecordTag)
    return Corrupt(rec + " does not start with its tag (byte " +
                   std::to_string(offset_ - 8) + ")");
  uint32_t name_len = GetLe<uint32_t>(fixed + 4);
  // Checked before anything is allocated or read, with the limits the
  // writer applies; CheckpointEntryProblem repeats them below.
  if (name_len == 0 || name_len > kCheckpointMaxNameBytes)
    return Corrupt(rec + " has a name of " + std::to_string(name_len) +
                   " bytes; a checkpoint holds names of 1.." +
                   std::to_string(kCheckpointMaxNameBytes) + " bytes");
  std::string name(name_len, '\0');
  WEFT_RETURN_IF_ERROR(Read(&name[0], name_len, what.c_str()));
  h.Put(name.data(), name_len);
  WEFT_RETURN_IF_ERROR(Read(fixed, 8, what.c_str()));
  h.Put(fixed, 8);
  uint32_t dtype = GetLe<uint32_t>(fixed);
  uint32_t rank = GetLe<uint32_t>(fixed + 4);
  if (rank > kCheckpointMaxRank)
    return Corrupt(rec + " has rank " + std::to_string(rank) +
                   "; a checkpoint holds ranks 0.." +
                   std::to_string(kCheckpointMaxRank));
  std::vector<int64_t> dims(rank);
  WEFT_RETURN_IF_ERROR(Read(dims.data(), 8ull * rank, what.c_str()));
  h.Put(dims.data(), 8ull * rank);
  unsigned char tail[12];
  WEFT_RETURN_IF_ERROR(Read(tail, sizeof tail, what.c_str()));
  h.Put(tail, 8);
  uint32_t header_crc = GetLe<uint32_t>(tail + 8);
  if (h.Crc() != header_crc)
    return Corrupt(rec + "'s header checksum does not match");
  // Checked, so the fields are as written: what remains are files
  // written wrongly, which are reported as corrupt too.
  out->name = std::move(name);
  out->dtype = static_cast<weft_dtype>(dtype);
  out->dims.assign(dims.data(), static_cast<int32_t>(rank));
  out->bytes = GetLe<uint64_t>(tail);
  std::string problem = CheckpointEntryProblem(*out);
  if (!problem.empty()) return Corrupt(problem);
  if (!names_.insert(out->name).second)
    return Corrupt("variable '" + out->name + "' appears twice");
  pending_ = true;
  pending_header_crc_ = header_crc;
  pending_bytes_ = out->bytes;
  pending_name_ = out->name;
  ++seen_;
  return nullptr;
}

weft_status* CheckpointReader::ReadData(void* dst) {
  if (!pending_)
    return Errorf(WEFT_INTERNAL, "%s: no record to read the data of",
                  Where().c_str());
  pending_ = false;
  std::string what = "the data of variable '" + pending_name_ + "'";
  // Refuse a length the file cannot hold before reading anything.
  if (pending_bytes_ > size_ - offset_)
    return Read(nullptr, pending_bytes_, what.c_str());
  uint32_t crc = 0;
  if (dst != nullptr) {
    WEFT_RETURN_IF_ERROR(Read(dst, pending_bytes_, what.c_str()));
    crc = Crc32c(0, dst, pending_bytes_);
  } else {
    std::vector<unsigned char> chunk(1 << 16);
    for (uint64_t left = pending_bytes_; left > 0;) {
      size_t n = left < chunk.size() ? left : chunk.size();
      WEFT_RETURN_IF_ERROR(Read(chunk.data(), n, what.c_str()));
      crc = Crc32c(crc, chunk.data(), n);
      left -= n;
    }
  }
  uint32_t stored;
  std::string sum = "the checksum of " + what;
  WEFT_RETURN_IF_ERROR(Read(&stored, sizeof stored, sum.c_str()));
  if (stored != crc)
    return Corrupt(what + " does not match its checksum");
  chain_ = ChainStep(chain_, pending_header_crc_, crc);
  return nullptr;
}

weft_status* CheckpointReader::Finish() {
  if (pending_) WEFT_RETURN_IF_ERROR(ReadData(nullptr));
  while (seen_ < declared_) {
    CheckpointEntry skipped;
    WEFT_RETURN_IF_ERROR(Next(&skipped));
    WEFT_RETURN_IF_ERROR(ReadData(nullptr));
  }
  unsigned char end[24];
  WEFT_RETURN_IF_ERROR(Read(end, sizeof end, "the end marker"));
  if (std::memcmp(end, kEndTag, sizeof kEndTag) != 0)
    return Corrupt("the end marker is missing after the last record");
  if (Crc32c(0, end, 20) != GetLe<uint32_t>(end + 20))
    return Corrupt("the end marker's checksum does not match");
  if (GetLe<uint64_t>(end + 8) != declared_)
    return Corrupt("the end marker counts " +
                   std::to_string(GetLe<uint64_t>(end + 8)) +
                   " records, the header " + std::to_string(declared_));
  if (GetLe<uint32_t>(end + 16) != chain_)
    return Corrupt("the records' checksums do not match the end marker's");
  if (offset_ != size_)
    return Corrupt(std::to_string(size_ - offset_) +
                   " bytes follow the end marker");
  return nullptr;
}

}  // namespace weft

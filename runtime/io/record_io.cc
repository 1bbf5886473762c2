// The record readers and the TFRecord writer of record_io.h.
#include "io/record_io.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/status.h"
#include "checkpoint/checkpoint_format.h"
#include "checkpoint/crc32c.h"
#include "tensor/dims.h"
#include "weft/tensor.h"

// TFRecord's integers are little-endian and IDX's big-endian; both are
// converted with the host taken to be little-endian, as the checkpoint code
// does.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the record readers assume a little-endian host");

namespace weft {
namespace io {
namespace {

// TFRecord's checksum: a CRC of data that itself holds CRCs is weak, so the
// format stores a rotated, offset one.
uint32_t MaskedCrc(const void* data, size_t n) {
  uint32_t crc = Crc32c(0, data, n);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

constexpr size_t kBufferBytes = 256 * 1024;

std::string Quoted(const std::string& path) { return "'" + path + "'"; }

// `status`, with *record emptied when it is an error: a caller never sees
// part of a record.
weft_status* Cleared(weft_status* status, std::string* record) {
  if (status != nullptr) record->clear();
  return status;
}

// "0x1f", "0x0000abcd": bytes and checksums in messages.
std::string Hex(uint32_t v, int digits) {
  char text[16];
  snprintf(text, sizeof text, "0x%0*x", digits, v);
  return text;
}

}  // namespace

weft_status* ParseCompression(const std::string& name,
                              const std::string& where, Compression* out) {
  if (name.empty() || name == "NONE") *out = Compression::kNone;
  else if (name == "GZIP") *out = Compression::kGzip;
  else if (name == "ZLIB") *out = Compression::kZlib;
  else
    return Error(WEFT_INVALID_ARGUMENT,
                 where + ": unknown compression '" + name +
                     "' (expected \"\", \"GZIP\" or \"ZLIB\")");
  return nullptr;
}

// ---- InputStream ------------------------------------------------------------

class InputStream {
 public:
  ~InputStream() {
    if (inflating_) inflateEnd(&z_);
    if (fd_ >= 0) close(fd_);
  }

  // `kind` names the format in messages ("TFRecord file"); `detect_gzip`
  // reads the file as gzip when it starts with gzip's magic bytes.
  weft_status* Open(const std::string& path, const std::string& kind,
                    const std::string& compression, bool detect_gzip) {
    path_ = path;
    kind_ = kind;
    where_ = kind + " " + Quoted(path);
    WEFT_RETURN_IF_ERROR(ParseCompression(compression, where_, &compression_));
    WEFT_RETURN_IF_ERROR(
        OpenRegularForReading(path, where_, kind.c_str(), &fd_, &size_));
    if (detect_gzip && compression_ == Compression::kNone) {
      unsigned char magic[2];
      ssize_t n;
      do n = pread(fd_, magic, 2, 0); while (n < 0 && errno == EINTR);
      if (n < 0) return OsError(errno, "cannot read " + kind_, path_);
      if (n == 2 && magic[0] == 0x1f && magic[1] == 0x8b)
        compression_ = Compression::kGzip;
    }
    buffer_.reset(new unsigned char[kBufferBytes]);
    if (compression_ != Compression::kNone) {
      raw_.reset(new unsigned char[kBufferBytes]);
      std::memset(&z_, 0, sizeof z_);
      // 16 + 15: a gzip wrapper; 15: a zlib one.  Both with the largest
      // window, which reads any stream.
      int bits = compression_ == Compression::kGzip ? 16 + MAX_WBITS
                                                    : MAX_WBITS;
      if (inflateInit2(&z_, bits) != Z_OK)
        return Error(WEFT_RESOURCE_EXHAUSTED,
                     where_ + ": cannot start zlib's decompressor");
      inflating_ = true;
    }
    return nullptr;
  }

  const std::string& where() const { return where_; }
  bool compressed() const { return compression_ != Compression::kNone; }
  // Bytes of data consumed so far: the file offset when uncompressed.
  uint64_t offset() const { return offset_; }
  // Bytes of an uncompressed file not consumed yet.
  uint64_t remaining() const { return size_ - offset_; }

  // "offset 12" or "offset 12 of the decompressed data", for messages.
  std::string At(uint64_t offset) const {
    return "offset " + std::to_string(offset) +
           (compressed() ? " of the decompressed data" : "");
  }
  weft_status* DataLoss(const std::string& what) {
    return Remember(Error(WEFT_DATA_LOSS, where_ + ": " + what));
  }
  weft_status* Invalid(const std::string& what) {
    return Remember(Error(WEFT_INVALID_ARGUMENT, where_ + ": " + what));
  }
  // The first error again, for a reader called after it failed.
  weft_status* Failed() const {
    return failed_code_ == WEFT_OK ? nullptr
                                   : Error(failed_code_, failed_message_);
  }

  // The bytes buffered and not consumed yet, reading more when none are:
  // *n == 0 only at the end of the data.
  weft_status* Peek(const unsigned char** data, size_t* n) {
    if (pos_ == len_ && !eof_) WEFT_RETURN_IF_ERROR(Remember(Fill()));
    *data = buffer_.get() + pos_;
    *n = len_ - pos_;
    return nullptr;
  }
  void Consume(size_t n) {
    pos_ += n;
    offset_ += n;
  }
  // Appends up to `n` bytes to *out, fewer only when the data ends; the
  // string grows as bytes arrive, never ahead of them.
  weft_status* Append(std::string* out, uint64_t n, uint64_t* got) {
    *got = 0;
    while (*got < n) {
      const unsigned char* p;
      size_t have;
      WEFT_RETURN_IF_ERROR(Peek(&p, &have));
      if (have == 0) break;
      size_t take = have < n - *got ? have : static_cast<size_t>(n - *got);
      out->append(reinterpret_cast<const char*>(p), take);
      Consume(take);
      *got += take;
    }
    return nullptr;
  }
  weft_status* Read(void* dst, size_t n, size_t* got) {
    *got = 0;
    while (*got < n) {
      const unsigned char* p;
      size_t have;
      WEFT_RETURN_IF_ERROR(Peek(&p, &have));
      if (have == 0) break;
      size_t take = have < n - *got ? have : n - *got;
      std::memcpy(static_cast<char*>(dst) + *got, p, take);
      Consume(take);
      *got += take;
    }
    return nullptr;
  }

 private:
  weft_status* Remember(weft_status* s) {
    if (s != nullptr && failed_code_ == WEFT_OK) {
      failed_code_ = weft_status_code(s);
      failed_message_ = weft_status_message(s);
    }
    return s;
  }

  weft_status* ReadFile(unsigned char* dst, size_t cap, size_t* got) {
    ssize_t n;
    do n = read(fd_, dst, cap); while (n < 0 && errno == EINTR);
    if (n < 0) return OsError(errno, "cannot read " + kind_, path_);
    *got = static_cast<size_t>(n);
    return nullptr;
  }

  // Refills the empty buffer; sets eof_ when the data has ended.
  weft_status* Fill() {
    pos_ = len_ = 0;
    if (!compressed()) {
      WEFT_RETURN_IF_ERROR(ReadFile(buffer_.get(), kBufferBytes, &len_));
      eof_ = len_ == 0;
      return nullptr;
    }
    while (len_ == 0) {
      if (z_.avail_in == 0 && !raw_eof_) {
        size_t got = 0;
        WEFT_RETURN_IF_ERROR(ReadFile(raw_.get(), kBufferBytes, &got));
        z_.next_in = raw_.get();
        z_.avail_in = static_cast<uInt>(got);
        raw_eof_ = got == 0;
      }
      if (z_.avail_in == 0 && raw_eof_ && (member_ended_ || !member_started_)) {
        eof_ = true;  // after the last stream (or an empty file)
        return nullptr;
      }
      if (member_ended_) {
        // Concatenated streams (`cat a.gz b.gz`) are one file's data, as
        // gzip itself reads them.
        if (inflateReset(&z_) != Z_OK)
          return DataLoss("zlib cannot restart after a stream");
        member_ended_ = member_started_ = false;
        continue;
      }
      member_started_ |= z_.avail_in > 0;
      z_.next_out = buffer_.get();
      z_.avail_out = static_cast<uInt>(kBufferBytes);
      int rc = inflate(&z_, Z_NO_FLUSH);
      len_ = kBufferBytes - z_.avail_out;
      if (rc == Z_STREAM_END) {
        member_ended_ = true;
      } else if (rc == Z_OK || rc == Z_BUF_ERROR) {
        if (len_ == 0 && z_.avail_in == 0 && raw_eof_)
          return Error(WEFT_DATA_LOSS,
                       where_ + ": truncated: the compressed data ends at " +
                           At(offset_) + ", inside its stream");
        // No progress with input left would loop for ever; zlib never
        // does that, but a loop must not depend on it.
        if (rc == Z_BUF_ERROR && z_.avail_in > 0)
          return Error(WEFT_DATA_LOSS, where_ + ": zlib makes no progress "
                                                "near " + At(offset_));
      } else {
        // offset_ + len_: where decompression stopped, which may be past
        // what the reader consumed (a bad checksum ends a whole stream).
        return Error(WEFT_DATA_LOSS,
                     where_ + ": corrupt compressed data near " +
                         At(offset_ + len_) + " (zlib: " +
                         (z_.msg != nullptr ? z_.msg : "error " +
                                                           std::to_string(rc)) +
                         ")");
      }
    }
    return nullptr;
  }

  std::string path_, kind_, where_;
  int fd_ = -1;
  uint64_t size_ = 0;
  Compression compression_ = Compression::kNone;
  std::unique_ptr<unsigned char[]> buffer_;  // data not yet consumed
  size_t pos_ = 0, len_ = 0;
  bool eof_ = false;
  uint64_t offset_ = 0;
  // Compressed files: the raw bytes and zlib's state.
  std::unique_ptr<unsigned char[]> raw_;
  z_stream z_;
  bool inflating_ = false, raw_eof_ = false;
  bool member_started_ = false, member_ended_ = false;
  weft_code failed_code_ = WEFT_OK;
  std::string failed_message_;
};

// ---- TFRecord ---------------------------------------------------------------

TfRecordReader::TfRecordReader() = default;
TfRecordReader::~TfRecordReader() = default;

weft_status* TfRecordReader::Open(const std::string& path,
                                  const std::string& compression) {
  in_.reset(new InputStream);
  return in_->Open(path, "TFRecord file", compression, false);
}

weft_status* TfRecordReader::Next(std::string* record, bool* end) {
  *end = false;
  record->clear();
  return Cleared(ReadNext(record, end), record);
}

weft_status* TfRecordReader::ReadNext(std::string* record, bool* end) {
  if (in_ == nullptr)
    return Error(WEFT_FAILED_PRECONDITION, "TFRecord reader: not open");
  WEFT_RETURN_IF_ERROR(in_->Failed());
  const uint64_t start = in_->offset();
  // For messages only: built when one is.
  auto rec = [&] {
    return "record " + std::to_string(records_) + " at " + in_->At(start);
  };
  unsigned char header[12];
  size_t got = 0;
  WEFT_RETURN_IF_ERROR(in_->Read(header, sizeof header, &got));
  if (got == 0) {
    *end = true;
    return nullptr;
  }
  if (got < sizeof header)
    return in_->DataLoss(rec() + ": truncated: the file ends " +
                         std::to_string(got) +
                         " bytes into its 12-byte header");
  const uint64_t length = GetLe<uint64_t>(header);
  const uint32_t stored = GetLe<uint32_t>(header + 8);
  const uint32_t computed = MaskedCrc(header, 8);
  if (stored != computed)
    return in_->DataLoss(rec() + ": the length's checksum does not match "
                         "(stored " + Hex(stored, 8) + ", computed " +
                         Hex(computed, 8) + "): corrupt, or not a TFRecord "
                         "file");
  if (length > kMaxRecordBytes)
    return in_->DataLoss(rec() + " declares " + std::to_string(length) +
                         " bytes; a record holds at most " +
                         std::to_string(kMaxRecordBytes));
  if (!in_->compressed() && length + 4 > in_->remaining())
    return in_->DataLoss(rec() + ": truncated: it declares " +
                         std::to_string(length) +
                         " bytes of data, but the file ends " +
                         std::to_string(in_->remaining()) +
                         " bytes after its header");
  uint64_t have = 0;
  WEFT_RETURN_IF_ERROR(in_->Append(record, length, &have));
  unsigned char tail[4];
  got = 0;
  if (have == length) WEFT_RETURN_IF_ERROR(in_->Read(tail, 4, &got));
  if (have < length || got < 4) {
    return in_->DataLoss(rec() + ": truncated: it declares " +
                         std::to_string(length) +
                         " bytes of data and a 4-byte checksum; the data "
                         "ends after " + std::to_string(have + got));
  }
  const uint32_t stored_data = GetLe<uint32_t>(tail);
  const uint32_t computed_data = MaskedCrc(record->data(), record->size());
  if (stored_data != computed_data) {
    return in_->DataLoss(rec() + ": the data's checksum does not match "
                         "(stored " + Hex(stored_data, 8) + ", computed " +
                         Hex(computed_data, 8) + ")");
  }
  ++records_;
  return nullptr;
}

struct TfRecordWriter::Zlib {
  z_stream z;
  bool started = false;
  ~Zlib() {
    if (started) deflateEnd(&z);
  }
};

TfRecordWriter::TfRecordWriter() = default;

TfRecordWriter::~TfRecordWriter() {
  if (file_ != nullptr) fclose(file_);
  if (!closed_ && !temp_.empty()) unlink(temp_.c_str());
}

weft_status* TfRecordWriter::IoError(const char* what, int err) const {
  return Annotate(OsError(err, what, temp_),
                  "writing TFRecord file '" + path_ + "': ");
}

weft_status* TfRecordWriter::Open(const std::string& path,
                                  const std::string& compression) {
  if (file_ != nullptr || closed_)
    return Error(WEFT_FAILED_PRECONDITION,
                 "TFRecord writer for '" + path_ + "' is already open");
  path_ = path;
  const std::string writing = "writing TFRecord file '" + path + "': ";
  WEFT_RETURN_IF_ERROR(ParseCompression(
      compression, "writing TFRecord file '" + path + "'", &compression_));
  if (compression_ != Compression::kNone) {
    zlib_.reset(new Zlib);
    std::memset(&zlib_->z, 0, sizeof zlib_->z);
    int bits = compression_ == Compression::kGzip ? 16 + MAX_WBITS : MAX_WBITS;
    if (deflateInit2(&zlib_->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, bits, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
      return Error(WEFT_RESOURCE_EXHAUSTED,
                   writing + "cannot start zlib's compressor");
    zlib_->started = true;
  }
  int fd = -1;
  WEFT_RETURN_IF_ERROR(Annotate(CreateTempBeside(path, &temp_, &fd), writing));
  file_ = fdopen(fd, "wb");
  if (file_ == nullptr) {
    int err = errno;
    close(fd);
    return IoError("cannot open", err);
  }
  return nullptr;
}

weft_status* TfRecordWriter::Deflate(const void* data, size_t n, int flush) {
  z_stream& z = zlib_->z;
  z.next_in = static_cast<Bytef*>(const_cast<void*>(data));
  z.avail_in = static_cast<uInt>(n);
  unsigned char out[64 * 1024];
  int rc;
  do {
    z.next_out = out;
    z.avail_out = sizeof out;
    rc = deflate(&z, flush);
    if (rc == Z_STREAM_ERROR)
      return Errorf(WEFT_INTERNAL, "writing TFRecord file '%s': zlib failed",
                    path_.c_str());
    size_t made = sizeof out - z.avail_out;
    if (made > 0 && fwrite(out, 1, made, file_) != made)
      return IoError("cannot write", errno);
  } while (z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  return nullptr;
}

weft_status* TfRecordWriter::Put(const void* data, size_t n) {
  if (zlib_ == nullptr) {
    if (n > 0 && fwrite(data, 1, n, file_) != n)
      return IoError("cannot write", errno);
    return nullptr;
  }
  // deflate takes at most 4 GiB a call.
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    size_t step = n < (size_t{1} << 30) ? n : size_t{1} << 30;
    WEFT_RETURN_IF_ERROR(Deflate(p, step, Z_NO_FLUSH));
    p += step;
    n -= step;
  }
  return nullptr;
}

void FrameTfRecord(const void* data, size_t n, unsigned char header[12],
                   unsigned char footer[4]) {
  const uint64_t length = n;
  std::memcpy(header, &length, 8);
  const uint32_t length_crc = MaskedCrc(header, 8);
  std::memcpy(header + 8, &length_crc, 4);
  const uint32_t data_crc = MaskedCrc(data, n);
  std::memcpy(footer, &data_crc, 4);
}

weft_status* TfRecordWriter::Write(const void* data, size_t n) {
  if (file_ == nullptr)
    return Error(WEFT_FAILED_PRECONDITION,
                 "TFRecord writer for '" + path_ + "' is not open");
  if (n > kMaxRecordBytes)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "writing TFRecord file '%s': a record of %zu bytes; "
                  "readers take at most %llu",
                  path_.c_str(), n,
                  static_cast<unsigned long long>(kMaxRecordBytes));
  unsigned char header[12], footer[4];
  FrameTfRecord(data, n, header, footer);
  WEFT_RETURN_IF_ERROR(Put(header, sizeof header));
  WEFT_RETURN_IF_ERROR(Put(data, n));
  return Put(footer, sizeof footer);
}

weft_status* TfRecordWriter::Close() {
  if (file_ == nullptr)
    return Error(WEFT_FAILED_PRECONDITION,
                 "TFRecord writer for '" + path_ + "' is not open");
  if (zlib_ != nullptr) WEFT_RETURN_IF_ERROR(Deflate(nullptr, 0, Z_FINISH));
  if (fflush(file_) != 0) return IoError("cannot write", errno);
  if (fsync(fileno(file_)) != 0) return IoError("cannot flush to disk", errno);
  FILE* f = std::exchange(file_, nullptr);
  if (fclose(f) != 0) return IoError("cannot close", errno);
  WEFT_RETURN_IF_ERROR(Annotate(RenameIntoPlace(temp_, path_),
                                "writing TFRecord file '" + path_ + "': "));
  closed_ = true;
  return nullptr;
}

// ---- Fixed-length records ---------------------------------------------------

FixedLengthRecordReader::FixedLengthRecordReader() = default;
FixedLengthRecordReader::~FixedLengthRecordReader() = default;

weft_status* FixedLengthRecordReader::Open(const std::string& path,
                                           uint64_t header_bytes,
                                           uint64_t record_bytes,
                                           uint64_t footer_bytes,
                                           const std::string& compression) {
  const std::string where = "fixed-length record file '" + path + "'";
  if (record_bytes == 0 || record_bytes > kMaxRecordBytes ||
      header_bytes > kMaxRecordBytes || footer_bytes > kMaxRecordBytes)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "%s: record_bytes %llu, header_bytes %llu, footer_bytes "
                  "%llu: records hold 1 to %llu bytes, headers and footers "
                  "at most that",
                  where.c_str(), static_cast<unsigned long long>(record_bytes),
                  static_cast<unsigned long long>(header_bytes),
                  static_cast<unsigned long long>(footer_bytes),
                  static_cast<unsigned long long>(kMaxRecordBytes));
  record_bytes_ = record_bytes;
  footer_bytes_ = footer_bytes;
  in_.reset(new InputStream);
  WEFT_RETURN_IF_ERROR(
      in_->Open(path, "fixed-length record file", compression, false));
  std::string header;
  uint64_t got = 0;
  WEFT_RETURN_IF_ERROR(in_->Append(&header, header_bytes, &got));
  if (got < header_bytes)
    return in_->DataLoss("truncated: the file ends " + std::to_string(got) +
                         " bytes into its " + std::to_string(header_bytes) +
                         "-byte header");
  return nullptr;
}

weft_status* FixedLengthRecordReader::Next(std::string* record, bool* end) {
  *end = false;
  record->clear();
  return Cleared(ReadNext(record, end), record);
}

weft_status* FixedLengthRecordReader::ReadNext(std::string* record, bool* end) {
  if (in_ == nullptr)
    return Error(WEFT_FAILED_PRECONDITION,
                 "fixed-length record reader: not open");
  WEFT_RETURN_IF_ERROR(in_->Failed());
  // The footer cannot be told from a record until the file ends, so each
  // step reads a record and a footer's worth beyond it; the excess is the
  // next record's start, or the footer.
  const uint64_t start = in_->offset() - ahead_.size();
  record->swap(ahead_);
  ahead_.clear();
  uint64_t got = 0;
  const uint64_t want = record_bytes_ + footer_bytes_;
  WEFT_RETURN_IF_ERROR(in_->Append(record, want - record->size(), &got));
  if (record->size() == footer_bytes_) {
    ahead_.swap(*record);  // the footer, so that a later call ends too
    *end = true;
    return nullptr;
  }
  if (record->size() < want) {
    const uint64_t left = record->size();
    return in_->DataLoss(
        "truncated: a partial record at " + in_->At(start) + " (record " +
        std::to_string(records_) + "): the file ends " +
        std::to_string(left) + " bytes after it starts, but records are " +
        std::to_string(record_bytes_) + " bytes and the footer " +
        std::to_string(footer_bytes_));
  }
  ahead_.assign(*record, record_bytes_, std::string::npos);
  record->resize(record_bytes_);
  ++records_;
  return nullptr;
}

// ---- Text lines -------------------------------------------------------------

TextLineReader::TextLineReader() = default;
TextLineReader::~TextLineReader() = default;

weft_status* TextLineReader::Open(const std::string& path,
                                  uint64_t skip_header_lines,
                                  const std::string& compression) {
  in_.reset(new InputStream);
  WEFT_RETURN_IF_ERROR(in_->Open(path, "text file", compression, false));
  std::string ignored;
  for (uint64_t i = 0; i < skip_header_lines; ++i) {
    bool end = false;
    WEFT_RETURN_IF_ERROR(ReadLine(&ignored, &end));
    if (end) break;
  }
  return nullptr;
}

weft_status* TextLineReader::ReadLine(std::string* line, bool* end) {
  line->clear();
  *end = false;
  const uint64_t start = in_->offset();
  bool any = false;
  for (;;) {
    const unsigned char* p;
    size_t n;
    WEFT_RETURN_IF_ERROR(in_->Peek(&p, &n));
    if (n == 0) {
      if (!any) {
        *end = true;
        return nullptr;
      }
      break;  // a last line without a newline
    }
    any = true;
    const void* nl = std::memchr(p, '\n', n);
    size_t take = nl ? static_cast<const unsigned char*>(nl) - p : n;
    if (line->size() + take > kMaxRecordBytes) {
      return in_->Invalid("line " + std::to_string(lines_) + " at " +
                          in_->At(start) + " is longer than " +
                          std::to_string(kMaxRecordBytes) + " bytes");
    }
    line->append(reinterpret_cast<const char*>(p), take);
    in_->Consume(nl ? take + 1 : take);
    if (nl) break;
  }
  if (!line->empty() && line->back() == '\r') line->pop_back();
  ++lines_;
  return nullptr;
}

weft_status* TextLineReader::Next(std::string* line, bool* end) {
  if (in_ == nullptr)
    return Error(WEFT_FAILED_PRECONDITION, "text line reader: not open");
  WEFT_RETURN_IF_ERROR(in_->Failed());
  return Cleared(ReadLine(line, end), line);
}

// ---- IDX --------------------------------------------------------------------

IdxReader::IdxReader() = default;
IdxReader::~IdxReader() = default;

namespace {

weft_dtype IdxDtype(unsigned char type) {
  switch (type) {
    case 0x08: return WEFT_UINT8;
    case 0x09: return WEFT_INT8;
    case 0x0B: return WEFT_INT16;
    case 0x0C: return WEFT_INT32;
    case 0x0D: return WEFT_FLOAT32;
    case 0x0E: return WEFT_FLOAT64;
  }
  return WEFT_DTYPE_INVALID;
}

uint32_t BigEndian32(const unsigned char* b) {
  return uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 |
         b[3];
}

// Reverses each `width`-byte element of `data` in place.
void SwapElements(std::string* data, size_t width) {
  if (width < 2) return;
  char* p = &(*data)[0];
  for (size_t i = 0; i + width <= data->size(); i += width)
    for (size_t a = i, b = i + width - 1; a < b; ++a, --b)
      std::swap(p[a], p[b]);
}

}  // namespace

weft_status* IdxReader::Open(const std::string& path) {
  in_.reset(new InputStream);
  WEFT_RETURN_IF_ERROR(in_->Open(path, "IDX file", "", true));
  unsigned char magic[4];
  size_t got = 0;
  WEFT_RETURN_IF_ERROR(in_->Read(magic, 4, &got));
  const size_t checked = got < 2 ? got : 2;
  for (size_t i = 0; i < checked; ++i)
    if (magic[i] != 0)
      return in_->Invalid("not an IDX file: byte " + std::to_string(i) +
                          " is " + Hex(magic[i], 2) +
                          " (IDX files start with 0x00 0x00)");
  if (got < 4)
    return in_->DataLoss("truncated: the file ends " + std::to_string(got) +
                         " bytes into its 4-byte magic number");
  dtype_ = IdxDtype(magic[2]);
  if (dtype_ == WEFT_DTYPE_INVALID)
    return in_->Invalid("not an IDX file: element type " +
                        Hex(magic[2], 2) + " is none of 0x08, 0x09, 0x0b, "
                        "0x0c, 0x0d, 0x0e");
  const int ndims = magic[3];
  if (ndims == 0 || ndims > WEFT_MAX_RANK)
    return in_->Invalid("the file declares " + std::to_string(ndims) +
                        " dimensions; records need 1 to " +
                        std::to_string(WEFT_MAX_RANK));
  unsigned char d[4 * WEFT_MAX_RANK];
  WEFT_RETURN_IF_ERROR(in_->Read(d, 4 * ndims, &got));
  if (got < 4u * ndims)
    return in_->DataLoss("truncated: the file ends inside the header's " +
                         std::to_string(ndims) + " dimensions");
  dims_.resize(ndims);
  record_bytes_ = weft_dtype_size(dtype_);
  for (int i = 0; i < ndims; ++i) {
    dims_[i] = BigEndian32(d + 4 * i);
    // A uint32 dim times at most 2^30 bytes cannot overflow.
    if (i > 0) record_bytes_ *= static_cast<uint64_t>(dims_[i]);
    if (record_bytes_ > kMaxRecordBytes)
      return in_->Invalid("dims " + ShapeString(dims_.data(), i + 1) +
                          " make records of more than " +
                          std::to_string(kMaxRecordBytes) + " bytes");
  }
  if (!in_->compressed()) {
    // dims_[0] < 2^32 and record_bytes_ <= 2^30: no overflow.
    const uint64_t data_bytes = static_cast<uint64_t>(dims_[0]) * record_bytes_;
    if (data_bytes != in_->remaining())
      return in_->DataLoss(
          (data_bytes > in_->remaining() ? "truncated: " : "") +
          std::string("the header declares ") + weft_dtype_name(dtype_) +
          ShapeString(dims_.data(), ndims) + ", " +
          std::to_string(data_bytes) + " bytes of data, but the file holds " +
          std::to_string(in_->remaining()) + " after the header");
  }
  return nullptr;
}

weft_status* IdxReader::Next(std::string* record, bool* end) {
  *end = false;
  record->clear();
  return Cleared(ReadNext(record, end), record);
}

weft_status* IdxReader::ReadNext(std::string* record, bool* end) {
  if (in_ == nullptr)
    return Error(WEFT_FAILED_PRECONDITION, "IDX reader: not open");
  WEFT_RETURN_IF_ERROR(in_->Failed());
  const uint64_t start = in_->offset();
  if (records_ == records()) {
    // Checked here for compressed files; Open did it for the others.
    unsigned char extra;
    size_t got = 0;
    WEFT_RETURN_IF_ERROR(in_->Read(&extra, 1, &got));
    if (got != 0)
      return in_->DataLoss("bytes follow the last of the " +
                           std::to_string(records()) + " records, at " +
                           in_->At(start));
    *end = true;
    return nullptr;
  }
  uint64_t got = 0;
  WEFT_RETURN_IF_ERROR(in_->Append(record, record_bytes_, &got));
  if (got < record_bytes_) {
    return in_->DataLoss("truncated: record " + std::to_string(records_) +
                         " of " + std::to_string(records()) + " at " +
                         in_->At(start) + " has " + std::to_string(got) +
                         " of its " + std::to_string(record_bytes_) +
                         " bytes");
  }
  SwapElements(record, weft_dtype_size(dtype_));
  ++records_;
  return nullptr;
}

}  // namespace io
}  // namespace weft

// Record files for input pipelines: TFRecord (read and written), fixed-
// length records, text lines and IDX arrays (the MNIST and Fashion-MNIST
// files), each read sequentially, one record at a time, so a dataset source
// holds one record in memory however large the file.
//
// Every file is opened as a regular file only (a FIFO would block the
// opening thread), may be compressed with zlib (GZIP or ZLIB framing; IDX
// files are recognised as gzip by their magic bytes), and every error names
// the file and, past the header, the record and its byte offset: the file's
// own offset for an uncompressed file, the decompressed stream's otherwise.
// A damaged file is DATA_LOSS; a file of another format or a bad option is
// INVALID_ARGUMENT.  No reader allocates more than what the file holds
// before checking it: a record's declared size is only trusted up to the
// bytes that actually arrive.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "weft/dtype.h"
#include "weft/status.h"

namespace weft {
namespace io {

// The largest record (TFRecord or fixed-length), line or IDX record the
// readers accept: a bound on the memory one record can claim.
constexpr uint64_t kMaxRecordBytes = uint64_t{1} << 30;

enum class Compression { kNone, kGzip, kZlib };

// "" / "NONE" -> kNone, "GZIP", "ZLIB" (TensorFlow's names); anything else
// is INVALID_ARGUMENT naming `where` and the value.
weft_status* ParseCompression(const std::string& name,
                              const std::string& where, Compression* out);

// A file read front to back through a buffer, inflated on the fly when
// compressed.  Internal to the readers; declared here so they can hold one.
class InputStream;

// TFRecord: each record is
//   uint64 length, uint32 masked CRC-32C of length, data, uint32 masked
//   CRC-32C of data
// little-endian, with mask(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8.
// The framing of one TFRecord record of `n` bytes: `header` (the length and
// its masked CRC) goes before the data, `footer` (the data's masked CRC)
// after.  TensorBoard's event files are framed the same way.
void FrameTfRecord(const void* data, size_t n, unsigned char header[12],
                   unsigned char footer[4]);

class TfRecordReader {
 public:
  TfRecordReader();
  ~TfRecordReader();
  TfRecordReader(const TfRecordReader&) = delete;
  TfRecordReader& operator=(const TfRecordReader&) = delete;

  // `compression`: "", "GZIP" or "ZLIB".
  weft_status* Open(const std::string& path, const std::string& compression);
  // The next record into *record, or *end = true at the end of the file.
  // *record is empty at the end and after an error, which every later
  // call returns again.
  weft_status* Next(std::string* record, bool* end);
  uint64_t records_read() const { return records_; }

 private:
  weft_status* ReadNext(std::string* record, bool* end);

  std::unique_ptr<InputStream> in_;
  uint64_t records_ = 0;
};

class TfRecordWriter {
 public:
  TfRecordWriter();
  // Removes the temporary file unless Close() succeeded.
  ~TfRecordWriter();
  TfRecordWriter(const TfRecordWriter&) = delete;
  TfRecordWriter& operator=(const TfRecordWriter&) = delete;

  // Creates a temporary file beside `path` (which must be absent or a
  // regular file); `compression` as for the reader.
  weft_status* Open(const std::string& path, const std::string& compression);
  weft_status* Write(const void* data, size_t n);
  // Finishes the compressed stream, flushes the file to disk and renames it
  // over `path`: a reader sees the old file or the whole new one.
  weft_status* Close();

 private:
  weft_status* Put(const void* data, size_t n);
  weft_status* Deflate(const void* data, size_t n, int flush);
  weft_status* IoError(const char* what, int err) const;

  std::string path_;
  std::string temp_;
  FILE* file_ = nullptr;
  Compression compression_ = Compression::kNone;
  struct Zlib;
  std::unique_ptr<Zlib> zlib_;
  bool closed_ = false;
};

// Records of `record_bytes` bytes between a header and a footer of fixed
// sizes (CIFAR-10's files, raw arrays).  What follows the header is
// `n * record_bytes + footer_bytes` bytes; anything else leaves a partial
// record, which is DATA_LOSS naming its offset.
class FixedLengthRecordReader {
 public:
  FixedLengthRecordReader();
  ~FixedLengthRecordReader();
  FixedLengthRecordReader(const FixedLengthRecordReader&) = delete;
  FixedLengthRecordReader& operator=(const FixedLengthRecordReader&) = delete;

  // record_bytes in [1, kMaxRecordBytes]; header and footer at most
  // kMaxRecordBytes (INVALID_ARGUMENT otherwise).
  weft_status* Open(const std::string& path, uint64_t header_bytes,
                    uint64_t record_bytes, uint64_t footer_bytes,
                    const std::string& compression = "");
  weft_status* Next(std::string* record, bool* end);
  uint64_t records_read() const { return records_; }

 private:
  weft_status* ReadNext(std::string* record, bool* end);

  std::unique_ptr<InputStream> in_;
  uint64_t record_bytes_ = 0;
  uint64_t footer_bytes_ = 0;
  // What has been read past the last record: the footer once the file ends.
  std::string ahead_;
  uint64_t records_ = 0;
};

// Lines, without their "\n" or "\r\n"; a last line without a newline is a
// line; skip_header_lines lines are dropped first.  Every reader's Next
// behaves as TfRecordReader's.
class TextLineReader {
 public:
  TextLineReader();
  ~TextLineReader();
  TextLineReader(const TextLineReader&) = delete;
  TextLineReader& operator=(const TextLineReader&) = delete;

  weft_status* Open(const std::string& path, uint64_t skip_header_lines,
                    const std::string& compression = "");
  weft_status* Next(std::string* line, bool* end);
  // Lines returned or skipped so far.
  uint64_t lines_read() const { return lines_; }

 private:
  weft_status* ReadLine(std::string* line, bool* end);

  std::unique_ptr<InputStream> in_;
  uint64_t skip_ = 0;
  uint64_t lines_ = 0;
};

// IDX arrays (http://yann.lecun.com/exdb/mnist/): bytes 0 0 TYPE NDIMS,
// NDIMS big-endian uint32 dims, then the elements, big-endian, row-major.
// Read as gzip when the file starts with gzip's magic bytes, as Debian's
// dataset-fashion-mnist ships them.  A record is one slice along the first
// dimension, in host byte order.
class IdxReader {
 public:
  IdxReader();
  ~IdxReader();
  IdxReader(const IdxReader&) = delete;
  IdxReader& operator=(const IdxReader&) = delete;

  // Reads and checks the header: INVALID_ARGUMENT for a file that is not
  // IDX (magic, element type, no dimensions), DATA_LOSS for a truncated
  // header or (uncompressed) a size that disagrees with the dims.
  weft_status* Open(const std::string& path);
  weft_dtype dtype() const { return dtype_; }
  // The file's dims; records() == dims()[0].
  const std::vector<int64_t>& dims() const { return dims_; }
  uint64_t records() const { return dims_.empty() ? 0 : dims_[0]; }
  uint64_t record_bytes() const { return record_bytes_; }
  // The next slice, in host byte order; at the end of the records, checks
  // that nothing follows them.
  weft_status* Next(std::string* record, bool* end);
  uint64_t records_read() const { return records_; }

 private:
  weft_status* ReadNext(std::string* record, bool* end);

  std::unique_ptr<InputStream> in_;
  weft_dtype dtype_ = WEFT_DTYPE_INVALID;
  std::vector<int64_t> dims_;
  uint64_t record_bytes_ = 0;
  uint64_t records_ = 0;
};

}  // namespace io
}  // namespace weft

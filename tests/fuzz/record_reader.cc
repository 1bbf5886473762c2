// Fuzz target: the record readers of runtime/io/record_io on arbitrary
// files.  Input: [reader] [a] [b] [c] payload.
//   reader & 3: 0 TFRecord, 1 fixed-length records, 2 text lines, 3 IDX;
//   (reader >> 2) & 3: how the payload becomes the file: 0 as it is, 1 and
//     2 compressed here with gzip and zlib framing (so the records parsed
//     are the fuzzer's), 3 as it is but read as GZIP (the fuzzer's bytes
//     are the compressed stream);
//   a, b, c: fixed-length records' header, record and footer sizes (mod
//     16, 1 + mod 32, mod 16); text lines' skip_header_lines (a mod 4).
// Every file must end in a status, never a crash or a sanitizer report,
// and no record may be larger than the file.  TFRecord files read whole
// are written again by TfRecordWriter (with the compression of b) and must
// read back the same.  Built and run by scripts/fuzz.sh.
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "io/record_io.h"

namespace {

// Files in /dev/shm where it exists: the writer's fsyncs cost nothing
// there.
std::string TempPath(const char* name) {
  const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  std::string tmpl = std::string(dir) + "/weft-fuzz-" + name + "-XXXXXX";
  int fd = mkstemp(&tmpl[0]);
  if (fd < 0) std::abort();
  close(fd);
  return tmpl;
}

const std::string& InputPath() {
  static const std::string path = TempPath("records");
  return path;
}

const std::string& RewritePath() {
  static const std::string path = TempPath("rewrite");
  return path;
}

std::string Compress(const uint8_t* data, size_t size, bool gzip) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
                   gzip ? 16 + MAX_WBITS : MAX_WBITS, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK)
    std::abort();
  std::string out(deflateBound(&z, size), '\0');
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = reinterpret_cast<Bytef*>(&out[0]);
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void WriteFile(const std::string& path, const void* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
}

// Reads every record, or the first 2^16 (an IDX file of zero-byte records
// may declare four billion of them); false at the first error.  Checks what
// a record may be: never larger than the file could hold.
template <typename Reader>
bool ReadAll(Reader* reader, uint64_t limit, std::vector<std::string>* out) {
  while (out->size() < (1u << 16)) {
    std::string record;
    bool end = false;
    weft_status* st = reader->Next(&record, &end);
    if (st != nullptr) {
      if (weft_status_code(st) == WEFT_OK || !record.empty()) std::abort();
      weft_status_destroy(st);
      return false;
    }
    if (end) return true;
    if (record.size() > limit) std::abort();
    out->push_back(std::move(record));
  }
  return false;  // not all read: no round trip
}

// TfRecordWriter then TfRecordReader on `records`: the same records back.
void RoundTrip(const std::vector<std::string>& records,
               const char* compression) {
  {
    weft::io::TfRecordWriter writer;
    weft_status* st = writer.Open(RewritePath(), compression);
    for (size_t i = 0; st == nullptr && i < records.size(); ++i)
      st = writer.Write(records[i].data(), records[i].size());
    if (st == nullptr) st = writer.Close();
    if (st != nullptr) std::abort();
  }
  weft::io::TfRecordReader reader;
  if (weft_status* st = reader.Open(RewritePath(), compression)) std::abort();
  std::vector<std::string> back;
  if (!ReadAll(&reader, UINT64_MAX, &back) || back != records) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const int kind = data[0] & 3, mode = (data[0] >> 2) & 3;
  const uint8_t a = data[1], b = data[2], c = data[3];
  data += 4;
  size -= 4;
  static const char* const kCompression[4] = {"", "GZIP", "ZLIB", "GZIP"};
  const char* compression = kCompression[mode];
  if (mode == 1 || mode == 2) {
    const std::string packed = Compress(data, size, mode == 1);
    WriteFile(InputPath(), packed.data(), packed.size());
  } else {
    WriteFile(InputPath(), data, size);
  }
  // Records come from the payload: none holds more than all of it.  (Mode
  // 3's payload is compressed; its records are bounded by the readers.)
  const uint64_t limit = mode == 3 ? UINT64_MAX : size;
  std::vector<std::string> records;
  weft_status* st = nullptr;
  switch (kind) {
    case 0: {
      weft::io::TfRecordReader reader;
      st = reader.Open(InputPath(), compression);
      if (st == nullptr && ReadAll(&reader, limit, &records) &&
          (a & 0xf0) == 0)
        RoundTrip(records, kCompression[b % 3]);
      break;
    }
    case 1: {
      weft::io::FixedLengthRecordReader reader;
      st = reader.Open(InputPath(), a % 16, 1 + b % 32, c % 16, compression);
      if (st == nullptr) ReadAll(&reader, 1 + b % 32, &records);
      break;
    }
    case 2: {
      weft::io::TextLineReader reader;
      st = reader.Open(InputPath(), a % 4, compression);
      if (st == nullptr) ReadAll(&reader, limit, &records);
      break;
    }
    default: {
      // IDX recognises gzip by itself: modes 1 and 2 compress, the rest
      // are read as they are.
      weft::io::IdxReader reader;
      st = reader.Open(InputPath());
      if (st == nullptr) {
        if (reader.record_bytes() > (uint64_t{1} << 30)) std::abort();
        ReadAll(&reader, reader.record_bytes(), &records);
      }
      break;
    }
  }
  weft_status_destroy(st);
  return 0;
}

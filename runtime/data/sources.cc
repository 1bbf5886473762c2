// Dataset sources (weft/dataset.h): tensor slices, ranges, TFRecord, text
// and IDX files; weft_tfrecord_write; and the handle's accessors.
#include <cstring>
#include <string>

#include "data/dataset_api.h"
#include "io/record_io.h"

namespace weft {
namespace data {
namespace {

// Slice i of `v` along dimension 0: a view of v's buffer, no copy (the
// dataset's tensors never change, and a view's buffer has other holders,
// so no kernel writes over it).
void Slice(const TensorValue& v, int64_t i, TensorValue* out) {
  out->dtype = v.dtype;
  out->dims = Dims(v.dims.data() + 1, v.dims.rank() - 1);
  const size_t bytes = out->byte_size();
  out->buffer.reset();
  out->offset = 0;
  if (bytes == 0) return;
  out->buffer = v.buffer;
  out->offset = v.offset + static_cast<uint64_t>(i) * bytes;
}

weft_status* BytesElement(const std::string& bytes, Element* out) {
  TensorValue v;
  int64_t n = static_cast<int64_t>(bytes.size());
  WEFT_RETURN_IF_ERROR(HostTensor(WEFT_UINT8, Dims(&n, 1), &v));
  if (n != 0) std::memcpy(v.host_data(), bytes.data(), bytes.size());
  out->assign(1, std::move(v));
  return nullptr;
}

// Files read one after another by a reader of type R.
template <typename R>
class FilesIterator : public Iterator {
 public:
  FilesIterator(std::vector<std::string> paths,
                std::function<weft_status*(R*, const std::string&)> open)
      : paths_(std::move(paths)), open_(std::move(open)) {}
  weft_status* Next(Element* out, bool* end) override {
    for (;;) {
      if (!reader_) {
        if (next_ == paths_.size()) return *end = true, nullptr;
        reader_ = std::make_unique<R>();
        WEFT_RETURN_IF_ERROR(open_(reader_.get(), paths_[next_++]));
      }
      std::string record;
      bool file_end = false;
      WEFT_RETURN_IF_ERROR(reader_->Next(&record, &file_end));
      if (!file_end) {
        *end = false;
        return BytesElement(record, out);
      }
      reader_.reset();
    }
  }

 private:
  std::vector<std::string> paths_;
  std::function<weft_status*(R*, const std::string&)> open_;
  size_t next_ = 0;
  std::unique_ptr<R> reader_;
};

}  // namespace
}  // namespace data
}  // namespace weft

using weft::Error;
using weft::Errorf;
using weft::data::CheckInput;
using weft::data::CheckOut;
using weft::data::CheckPaths;
using weft::data::DatasetPtr;
using weft::data::Element;
using weft::data::Iterator;
using weft::data::Wrap;

extern "C" {

void weft_dataset_destroy(weft_dataset* dataset) { delete dataset; }

int32_t weft_dataset_num_components(const weft_dataset* ds) {
  return ds ? static_cast<int32_t>(ds->impl->types.size()) : 0;
}

weft_dtype weft_dataset_component_dtype(const weft_dataset* ds, int32_t i) {
  if (ds == nullptr || i < 0 ||
      i >= static_cast<int32_t>(ds->impl->types.size()))
    return WEFT_DTYPE_INVALID;
  return ds->impl->types[static_cast<size_t>(i)];
}

int32_t weft_dataset_component_shape(const weft_dataset* ds, int32_t i,
                                     int64_t* dims) {
  if (ds == nullptr || i < 0 ||
      i >= static_cast<int32_t>(ds->impl->shapes.size()))
    return -2;
  const weft::ShapeInfo& s = ds->impl->shapes[static_cast<size_t>(i)];
  if (!s.known_rank()) return -1;
  if (dims != nullptr)
    for (int32_t k = 0; k < s.rank; ++k) dims[k] = s.dims[static_cast<size_t>(k)];
  return s.rank;
}

const char* weft_dataset_name(const weft_dataset* ds) {
  if (ds == nullptr) return nullptr;
  thread_local std::string name;
  name = ds->impl->Name();
  return name.c_str();
}

weft_status* weft_dataset_from_tensor_slices(weft_tensor* const* components,
                                             int32_t n, weft_dataset** out) {
  WEFT_RETURN_IF_ERROR(CheckOut(out));
  if (n < 1 || n > 1024 || components == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "give 1 to 1024 components");
  return weft::Guard([&]() -> weft_status* {
    auto values = std::make_shared<Element>();
    std::vector<weft_dtype> types;
    std::vector<weft::ShapeInfo> shapes;
    for (int32_t i = 0; i < n; ++i) {
      if (components[i] == nullptr)
        return Errorf(WEFT_INVALID_ARGUMENT, "component %d is NULL", i);
      const weft::TensorValue& v = components[i]->value;
      if (v.dims.rank() < 1)
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "component %d is a scalar: slices are taken along "
                      "dimension 0", i);
      if (v.dims[0] != components[0]->value.dims[0])
        return Errorf(WEFT_INVALID_ARGUMENT,
                      "component %d has %lld slices, component 0 %lld", i,
                      static_cast<long long>(v.dims[0]),
                      static_cast<long long>(components[0]->value.dims[0]));
      // A copy: the caller may change or free its tensors afterwards.
      weft::TensorValue copy;
      WEFT_RETURN_IF_ERROR(weft::data::HostTensor(v.dtype, v.dims, &copy));
      if (copy.byte_size() != 0) {
        std::memcpy(copy.host_data(), v.host_data(), copy.byte_size());
        // Elements are views of it (Slice): a fetch copies them.
        copy.buffer->is_state = true;
      }
      values->push_back(std::move(copy));
      types.push_back(v.dtype);
      shapes.push_back(weft::ShapeInfo::Of(
          std::vector<int64_t>(v.dims.data() + 1, v.dims.data() + v.dims.rank())));
    }
    const int64_t count = (*values)[0].dims[0];
    return Wrap(weft::data::Fn(
                    "TensorSlices", types, shapes,
                    [values, count](std::unique_ptr<Iterator>* it) -> weft_status* {
                      auto i = std::make_shared<int64_t>(0);
                      *it = std::make_unique<weft::data::FnIterator>(
                          [values, count, i](Element* e, bool* end) -> weft_status* {
                            if (*i == count) return *end = true, nullptr;
                            *end = false;
                            e->resize(values->size());
                            for (size_t c = 0; c < values->size(); ++c)
                              weft::data::Slice((*values)[c], *i, &(*e)[c]);
                            ++*i;
                            return static_cast<weft_status*>(nullptr);
                          });
                      return static_cast<weft_status*>(nullptr);
                    }),
                out);
  });
}

weft_status* weft_dataset_range(int64_t start, int64_t stop, int64_t step,
                                weft_dataset** out) {
  WEFT_RETURN_IF_ERROR(CheckOut(out));
  if (step == 0) return Error(WEFT_INVALID_ARGUMENT, "step is 0");
  return weft::Guard([&]() -> weft_status* {
    return Wrap(
        weft::data::Fn(
            "Range", {WEFT_INT64}, {weft::ShapeInfo::Of({})},
            [start, stop, step](std::unique_ptr<Iterator>* it) -> weft_status* {
              auto at = std::make_shared<int64_t>(start);
              *it = std::make_unique<weft::data::FnIterator>(
                  [at, stop, step](Element* e, bool* end) -> weft_status* {
                    if (step > 0 ? *at >= stop : *at <= stop)
                      return *end = true, nullptr;
                    *end = false;
                    e->resize(1);
                    WEFT_RETURN_IF_ERROR(weft::data::HostTensor(
                        WEFT_INT64, weft::Dims(), &(*e)[0]));
                    std::memcpy((*e)[0].host_data(), at.get(), 8);
                    // Saturating: a step past INT64_MAX ends the range.
                    if (__builtin_add_overflow(*at, step, at.get()))
                      *at = stop;
                    return nullptr;
                  });
              return static_cast<weft_status*>(nullptr);
            }),
        out);
  });
}

weft_status* weft_dataset_tfrecord(const char* const* paths, int32_t n,
                                   const char* compression,
                                   weft_dataset** out) {
  WEFT_RETURN_IF_ERROR(CheckOut(out));
  WEFT_RETURN_IF_ERROR(CheckPaths(paths, n));
  std::string comp;
  WEFT_RETURN_IF_ERROR(weft::data::CheckCompression(compression, &comp));
  return weft::Guard([&]() -> weft_status* {
    std::vector<std::string> files(paths, paths + n);
    return Wrap(weft::data::Fn(
                    "TFRecord", {WEFT_UINT8}, {weft::ShapeInfo::Of({-1})},
                    [files, comp](std::unique_ptr<Iterator>* it) -> weft_status* {
                      *it = std::make_unique<
                          weft::data::FilesIterator<weft::io::TfRecordReader>>(
                          files, [comp](weft::io::TfRecordReader* r,
                                        const std::string& p) {
                            return r->Open(p, comp);
                          });
                      return static_cast<weft_status*>(nullptr);
                    }),
                out);
  });
}

weft_status* weft_dataset_text_lines(const char* const* paths, int32_t n,
                                     weft_dataset** out) {
  WEFT_RETURN_IF_ERROR(CheckOut(out));
  WEFT_RETURN_IF_ERROR(CheckPaths(paths, n));
  return weft::Guard([&]() -> weft_status* {
    std::vector<std::string> files(paths, paths + n);
    return Wrap(weft::data::Fn(
                    "TextLines", {WEFT_UINT8}, {weft::ShapeInfo::Of({-1})},
                    [files](std::unique_ptr<Iterator>* it) -> weft_status* {
                      *it = std::make_unique<
                          weft::data::FilesIterator<weft::io::TextLineReader>>(
                          files, [](weft::io::TextLineReader* r,
                                    const std::string& p) {
                            return r->Open(p, 0);
                          });
                      return static_cast<weft_status*>(nullptr);
                    }),
                out);
  });
}

weft_status* weft_dataset_idx(const char* path, weft_dataset** out) {
  WEFT_RETURN_IF_ERROR(CheckOut(out));
  WEFT_RETURN_IF_ERROR(CheckPaths(&path, 1));
  return weft::Guard([&]() -> weft_status* {
    // The header now: the element's dtype and shape are the dataset's.
    weft::io::IdxReader probe;
    WEFT_RETURN_IF_ERROR(probe.Open(path));
    const weft_dtype dtype = probe.dtype();
    std::vector<int64_t> dims(probe.dims().begin() + 1, probe.dims().end());
    std::string file = path;
    return Wrap(
        weft::data::Fn(
            "IDX", {dtype}, {weft::ShapeInfo::Of(dims)},
            [file, dims, dtype](std::unique_ptr<Iterator>* it) -> weft_status* {
              auto reader = std::make_shared<weft::io::IdxReader>();
              WEFT_RETURN_IF_ERROR(reader->Open(file));
              if (reader->dtype() != dtype ||
                  std::vector<int64_t>(reader->dims().begin() + 1,
                                       reader->dims().end()) != dims)
                return Errorf(WEFT_FAILED_PRECONDITION,
                              "'%s' changed since its dataset was made",
                              file.c_str());
              *it = std::make_unique<weft::data::FnIterator>(
                  [reader, dims, dtype](Element* e, bool* end)
                      -> weft_status* {
                    std::string record;
                    WEFT_RETURN_IF_ERROR(reader->Next(&record, end));
                    if (*end) return nullptr;
                    e->resize(1);
                    WEFT_RETURN_IF_ERROR(weft::data::HostTensor(
                        dtype,
                        weft::Dims(dims.data(),
                                   static_cast<int32_t>(dims.size())),
                        &(*e)[0]));
                    if ((*e)[0].byte_size() != record.size())
                      return Error(WEFT_INTERNAL, "IDX record size");
                    std::memcpy((*e)[0].host_data(), record.data(),
                                record.size());
                    return nullptr;
                  });
              return static_cast<weft_status*>(nullptr);
            }),
        out);
  });
}

weft_status* weft_tfrecord_write(const char* path, const char* compression,
                                 const weft_tensor* const* records,
                                 int32_t num_records) {
  WEFT_RETURN_IF_ERROR(CheckPaths(&path, 1));
  if (num_records < 0 || (num_records > 0 && records == nullptr))
    return Error(WEFT_INVALID_ARGUMENT, "records is NULL");
  std::string comp;
  WEFT_RETURN_IF_ERROR(weft::data::CheckCompression(compression, &comp));
  for (int32_t i = 0; i < num_records; ++i)
    if (records[i] == nullptr)
      return Errorf(WEFT_INVALID_ARGUMENT, "record %d is NULL", i);
  return weft::Guard([&]() -> weft_status* {
    weft::io::TfRecordWriter writer;
    WEFT_RETURN_IF_ERROR(writer.Open(path, comp));
    for (int32_t i = 0; i < num_records; ++i) {
      const weft::TensorValue& v = records[i]->value;
      static const char kNothing = 0;  // an empty tensor may have no data
      WEFT_RETURN_IF_ERROR(writer.Write(
          v.byte_size() != 0 ? v.host_data() : &kNothing, v.byte_size()));
    }
    return writer.Close();
  });
}

}  // extern "C"

// ---- Fixed-length records (appended in 1.7) ----------------------------------

extern "C" {

weft_status* weft_dataset_fixed_length_records(
    const char* const* paths, int32_t n, int64_t header_bytes,
    int64_t record_bytes, int64_t footer_bytes, const char* compression,
    weft_dataset** out) {
  WEFT_RETURN_IF_ERROR(CheckOut(out));
  WEFT_RETURN_IF_ERROR(CheckPaths(paths, n));
  const int64_t most = static_cast<int64_t>(weft::io::kMaxRecordBytes);
  if (record_bytes < 1 || record_bytes > most || header_bytes < 0 ||
      header_bytes > most || footer_bytes < 0 || footer_bytes > most)
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "record_bytes %lld, header_bytes %lld, footer_bytes %lld: "
                  "give records of 1 to %lld bytes, headers and footers of "
                  "0 to %lld",
                  static_cast<long long>(record_bytes),
                  static_cast<long long>(header_bytes),
                  static_cast<long long>(footer_bytes),
                  static_cast<long long>(most), static_cast<long long>(most));
  std::string comp;
  WEFT_RETURN_IF_ERROR(weft::data::CheckCompression(compression, &comp));
  return weft::Guard([&]() -> weft_status* {
    std::vector<std::string> files(paths, paths + n);
    const uint64_t header = static_cast<uint64_t>(header_bytes);
    const uint64_t record = static_cast<uint64_t>(record_bytes);
    const uint64_t footer = static_cast<uint64_t>(footer_bytes);
    return Wrap(
        weft::data::Fn(
            "FixedLengthRecords", {WEFT_UINT8},
            {weft::ShapeInfo::Of({record_bytes})},
            [files, header, record, footer,
             comp](std::unique_ptr<Iterator>* it) -> weft_status* {
              *it = std::make_unique<weft::data::FilesIterator<
                  weft::io::FixedLengthRecordReader>>(
                  files, [header, record, footer, comp](
                             weft::io::FixedLengthRecordReader* r,
                             const std::string& p) {
                    return r->Open(p, header, record, footer, comp);
                  });
              return static_cast<weft_status*>(nullptr);
            }),
        out);
  });
}

}  // extern "C"

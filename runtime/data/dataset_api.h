// Internal to runtime/data: what the C API over datasets (sources.cc,
// transformations.cc) shares — the handle, datasets and iterators made
// from functions, and the argument checks.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "data/dataset.h"
#include "weft/dataset.h"

struct weft_dataset {
  weft::data::DatasetPtr impl;
};

namespace weft {
namespace data {

using Make = std::function<weft_status*(std::unique_ptr<Iterator>*)>;

// A dataset given by its iterator factory (most are a few lines).
class FnDataset : public Dataset {
 public:
  FnDataset(std::string name, std::vector<weft_dtype> t,
            std::vector<ShapeInfo> s, Make make)
      : name_(std::move(name)), make_(std::move(make)) {
    types = std::move(t);
    shapes = std::move(s);
  }
  weft_status* MakeIterator(std::unique_ptr<Iterator>* out) const override {
    return make_(out);
  }
  std::string Name() const override { return name_; }

 private:
  std::string name_;
  Make make_;
};

// An iterator from a Next function.
class FnIterator : public Iterator {
 public:
  explicit FnIterator(std::function<weft_status*(Element*, bool*)> next)
      : next_(std::move(next)) {}
  weft_status* Next(Element* out, bool* end) override {
    return next_(out, end);
  }

 private:
  std::function<weft_status*(Element*, bool*)> next_;
};

// A dataset of `make`'s iterators.
inline DatasetPtr Fn(std::string name, std::vector<weft_dtype> t,
              std::vector<ShapeInfo> s, Make make) {
  return std::make_shared<FnDataset>(std::move(name), std::move(t),
                                     std::move(s), std::move(make));
}

// The C API's conventions: a new handle in *out, *out NULL on error.
inline weft_status* Wrap(DatasetPtr ds, weft_dataset** out) {
  *out = new weft_dataset{std::move(ds)};
  return nullptr;
}

inline weft_status* CheckOut(weft_dataset** out) {
  if (out == nullptr) return Error(WEFT_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  return nullptr;
}

inline weft_status* CheckInput(const weft_dataset* in, weft_dataset** out) {
  WEFT_RETURN_IF_ERROR(CheckOut(out));
  if (in == nullptr) return Error(WEFT_INVALID_ARGUMENT, "input is NULL");
  return nullptr;
}

inline weft_status* CheckPaths(const char* const* paths, int32_t n) {
  if (n < 1 || paths == nullptr)
    return Error(WEFT_INVALID_ARGUMENT, "give at least one path");
  for (int32_t i = 0; i < n; ++i)
    if (paths[i] == nullptr || paths[i][0] == '\0')
      return Errorf(WEFT_INVALID_ARGUMENT, "path %d is NULL or empty", i);
  return nullptr;
}

// A record file's compression: "" (or NULL), "GZIP" or "ZLIB" into *out;
// anything else is INVALID_ARGUMENT.
inline weft_status* CheckCompression(const char* compression,
                                     std::string* out) {
  *out = compression ? compression : "";
  if (*out != "" && *out != "GZIP" && *out != "ZLIB")
    return Errorf(WEFT_INVALID_ARGUMENT,
                  "compression '%s': give \"\", \"GZIP\" or \"ZLIB\"",
                  out->c_str());
  return nullptr;
}

}  // namespace data
}  // namespace weft

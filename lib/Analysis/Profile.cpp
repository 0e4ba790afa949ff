//===- Profile.cpp - Measured-profile JSON ----------------------*- C++ -*-===//
//
// Part of pipeopt.
//
//===----------------------------------------------------------------------===//

#include "pipeopt/Analysis/CostModel.h"
#include "pipeopt/Support/JSONKeys.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <string>

using namespace pipeopt;
using namespace pipeopt::cost;
using llvm::StringRef;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static llvm::Expected<llvm::json::Value> readJSONFile(StringRef path,
                                                      StringRef what) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError(llvm::formatv("cannot read {0} file '{1}': {2}", what,
                                   path, buffer.getError().message()));
  auto parsed = parseJSONRejectingDuplicates((*buffer)->getBuffer());
  if (!parsed)
    return makeError(llvm::formatv("invalid JSON in {0} file '{1}': {2}", what,
                                   path, llvm::toString(parsed.takeError())));
  return std::move(*parsed);
}

//===----------------------------------------------------------------------===//
// Profile JSON
//===----------------------------------------------------------------------===//

llvm::Expected<Profile> cost::parseProfile(const llvm::json::Value &value) {
  const llvm::json::Object *obj = value.getAsObject();
  if (!obj)
    return makeError("profile JSON: expected an object at the top level");
  Profile profile;
  auto readTimes = [](const llvm::json::Object &e, Profile::Times &t,
                      std::string &err, const std::string &where) {
    auto get = [&](StringRef key, double &out) {
      const llvm::json::Value *v = e.get(key);
      if (!v || v->kind() == llvm::json::Value::Null || !err.empty())
        return;
      auto d = v->getAsNumber();
      if (!d || !std::isfinite(*d) || *d < 0) {
        err = where + "." + key.str() + ": expected a number of seconds >= 0";
        return;
      }
      out = *d;
    };
    get("forward_s", t.forward);
    get("backward_input_s", t.backwardInput);
    get("backward_weight_s", t.backwardWeight);
    get("backward_full_s", t.backwardFull);
    if (t.backwardFull < 0)
      get("backward_s", t.backwardFull);
    if (err.empty() && t.forward < 0 && t.backwardInput < 0 &&
        t.backwardWeight < 0 && t.backwardFull < 0)
      err = where + ": no time given (\"forward_s\", \"backward_s\", ...)";
  };
  for (StringRef section : {"stages", "ops"}) {
    const llvm::json::Value *v = obj->get(section);
    if (!v)
      continue;
    const llvm::json::Array *arr = v->getAsArray();
    if (!arr)
      return makeError("profile JSON: '" + section + "' must be an array");
    StringRef idKey = section == "stages" ? "stage" : "index";
    for (size_t i = 0; i < arr->size(); ++i) {
      std::string where = llvm::formatv("{0}[{1}]", section, i).str();
      const llvm::json::Object *e = (*arr)[i].getAsObject();
      if (!e)
        return makeError("profile JSON: " + where + ": expected an object");
      auto id = e->getInteger(idKey);
      if (!id || *id < 0)
        return makeError("profile JSON: " + where + ": '" + idKey +
                         "' must be a whole number >= 0" +
                         (e->get(idKey) ? "" : " (it is missing)"));
      Profile::Times t;
      std::string err;
      readTimes(*e, t, err, where);
      if (!err.empty())
        return makeError("profile JSON: " + err);
      auto &table = section == "stages" ? profile.stages : profile.ops;
      if (!table.try_emplace(*id, t).second)
        return makeError("profile JSON: " + where + ": " + idKey + " " +
                         std::to_string(*id) + " is listed twice");
    }
  }
  if (profile.empty())
    return makeError("profile JSON: no \"stages\" or \"ops\" entries");
  return profile;
}

llvm::Expected<Profile> cost::loadProfile(StringRef path) {
  auto json = readJSONFile(path, "profile");
  if (!json)
    return json.takeError();
  auto p = parseProfile(*json);
  if (!p)
    return makeError(
        llvm::formatv("{0}: {1}", path, llvm::toString(p.takeError())));
  return p;
}

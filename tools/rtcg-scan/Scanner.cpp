#include "Scanner.h"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Lex/Lexer.h>
#include <clang/Tooling/ArgumentsAdjusters.h>
#include <clang/Tooling/CompilationDatabase.h>
#include <clang/Tooling/Tooling.h>
#include <fmt/format.h>

#include <cctype>
#include <map>
#include <set>
#include <tuple>

#include "Check.h"
#include "LiteralDecode.h"
#include "support/Error.h"

namespace rtcg {
namespace {

using namespace clang;
// rtcg has its own Expr and Stmt (the IR's); in this file they are clang's.
using clang::Expr;
using clang::Stmt;

// Everything found over all translation units; a header's kernels are kept once.
struct Collector {
  std::vector<FoundKernel> kernels;
  std::set<std::tuple<std::string, int, int>> seen;
};

bool onlyDefaultArgsAfterFirst(const CXXConstructExpr* c) {
  for (unsigned i = 1; i < c->getNumArgs(); ++i)
    if (!isa<CXXDefaultArgExpr>(c->getArg(i))) return false;
  return c->getNumArgs() >= 1;
}

// Strips what the compiler added around an expression (casts, temporaries, copies, conversions by
// constructor such as const char* -> std::string_view) down to what the user wrote.
const Expr* strip(const Expr* e) {
  while (e) {
    const Expr* before = e;
    e = e->IgnoreParens()->IgnoreImplicit();
    if (const auto* c = dyn_cast<CXXConstructExpr>(e); c && !isa<CXXTemporaryObjectExpr>(c) && onlyDefaultArgsAfterFirst(c))
      e = c->getArg(0);
    if (e == before) break;
  }
  return e;
}

// The string literal an expression denotes: the literal itself, a functional cast or conversion
// of one, `"..."sv`, or a variable initialised by one (the scan follows the initializer; it does
// not see later assignments to a non-const variable).
const StringLiteral* findLiteral(const Expr* e, int depth = 0) {
  e = strip(e);
  if (!e || depth > 8) return nullptr;
  if (const auto* s = dyn_cast<StringLiteral>(e)) return s->getCharByteWidth() == 1 ? s : nullptr;
  if (const auto* u = dyn_cast<UserDefinedLiteral>(e))
    return u->getLiteralOperatorKind() == UserDefinedLiteral::LOK_String ? findLiteral(u->getArg(0), depth + 1)
                                                                          : nullptr;
  if (const auto* f = dyn_cast<CXXFunctionalCastExpr>(e)) return findLiteral(f->getSubExpr(), depth + 1);
  if (const auto* c = dyn_cast<CXXConstructExpr>(e))
    return onlyDefaultArgsAfterFirst(c) ? findLiteral(c->getArg(0), depth + 1) : nullptr;
  if (const auto* d = dyn_cast<DeclRefExpr>(e))
    if (const auto* v = dyn_cast<VarDecl>(d->getDecl()); v && v->getAnyInitializer())
      return findLiteral(v->getAnyInitializer(), depth + 1);
  return nullptr;
}

bool isStdPair(QualType t) {
  const auto* rec = t->getAsCXXRecordDecl();
  return rec && rec->getQualifiedNameAsString() == "std::pair";
}

std::optional<ScalarType> scalarTypeOf(QualType t, const ASTContext& ctx) {
  t = t.getCanonicalType().getUnqualifiedType();
  if (const auto* b = t->getAs<BuiltinType>()) {
    if (b->getKind() == BuiltinType::Float) return ScalarType::F32;
    if (b->getKind() == BuiltinType::Double) return ScalarType::F64;
    // int8_t and uint8_t (signed / unsigned char): the 8-bit storage integers; plain char is neither.
    if (b->getKind() == BuiltinType::SChar) return ScalarType::I8;
    if (b->getKind() == BuiltinType::UChar) return ScalarType::U8;
    if (b->isSignedInteger() && b->getKind() != BuiltinType::Char_S) {
      uint64_t bits = ctx.getTypeSize(t);
      if (bits == 32) return ScalarType::I32;
      if (bits == 64) return ScalarType::I64;
    }
    // uint32_t (unsigned int): u32, arrays and scalars.
    if (b->isUnsignedInteger() && b->getKind() != BuiltinType::Char_U && b->getKind() != BuiltinType::Bool &&
        ctx.getTypeSize(t) == 32)
      return ScalarType::U32;
  }
  // The 16-bit storage structs of rtcg/Half.h: element types of arrays (no scalar takes them).
  if (const auto* rec = t->getAsCXXRecordDecl()) {
    const std::string name = rec->getQualifiedNameAsString();
    if (name == "rtcg::f16") return ScalarType::F16;
    if (name == "rtcg::bf16") return ScalarType::BF16;
  }
  return std::nullopt;
}

class Visitor : public RecursiveASTVisitor<Visitor> {
  using Base = RecursiveASTVisitor<Visitor>;

 public:
  Visitor(ASTContext& ctx, Collector& out) : ctx_(ctx), sm_(ctx.getSourceManager()), out_(out) {}

  // Library and system headers hold no user kernels: skipping them keeps the scan fast.
  bool TraverseDecl(Decl* d) {
    if (d && !isa<TranslationUnitDecl>(d) && sm_.isInSystemHeader(d->getLocation())) return true;
    return Base::TraverseDecl(d);
  }

  bool VisitCXXMemberCallExpr(CXXMemberCallExpr* call) {
    if (isCompileCall(call)) record(call);
    return true;
  }

  bool VisitVarDecl(VarDecl* v) {
    if (const auto* call = dyn_cast_or_null<CXXMemberCallExpr>(strip(v->getInit())); call && isCompileCall(call))
      if (FoundKernel* k = record(call)) {
        k->variable = v->getNameAsString();
        kernelVars_[v] = call;
      }
    return true;
  }

  // `k(args...)` on a CompiledKernel: kept until the end of the unit, when the kernels are known.
  bool VisitCXXOperatorCallExpr(CXXOperatorCallExpr* call) {
    if (call->getOperator() == OO_Equal && call->getNumArgs() == 2)
      if (const auto* d = dyn_cast<DeclRefExpr>(strip(call->getArg(0)))) reassigned_.insert(d->getDecl());
    if (call->getOperator() != OO_Call || call->getNumArgs() < 1) return true;
    const Expr* object = strip(call->getArg(0));
    const CXXRecordDecl* rec = object->getType()->getAsCXXRecordDecl();
    if (!rec || rec->getQualifiedNameAsString() != "rtcg::CompiledKernel") return true;
    KernelCall kc{position(call->getBeginLoc()), {}};
    for (unsigned i = 1; i < call->getNumArgs(); ++i) kc.args.push_back(classify(call->getArg(i)));
    calls_.push_back({object, std::move(kc)});
    return true;
  }

  // Attaches the calls to their kernels and hands the kernels to the collector.
  void finish() {
    for (auto& [object, kc] : calls_) {
      const CXXMemberCallExpr* compile = nullptr;
      if (const auto* d = dyn_cast<DeclRefExpr>(object)) {
        // A variable assigned another kernel later may hold either: its calls are the runtime's.
        if (reassigned_.count(d->getDecl())) continue;
        auto it = kernelVars_.find(d->getDecl());
        if (it != kernelVars_.end()) compile = it->second;
      } else if (const auto* c = dyn_cast<CXXMemberCallExpr>(object); c && isCompileCall(c)) {
        compile = c;  // ctx.compile(...)(args)
      }
      auto it = compile ? byCall_.find(compile) : byCall_.end();
      if (it != byCall_.end()) found_[it->second].calls.push_back(std::move(kc));
    }
    for (FoundKernel& k : found_) {
      if (out_.seen.insert({k.file, k.callPos.line, k.callPos.col}).second) out_.kernels.push_back(std::move(k));
    }
  }

 private:
  bool isCompileCall(const CXXMemberCallExpr* call) const {
    const CXXMethodDecl* m = call->getMethodDecl();
    return m && m->getNameAsString() == "compile" && m->getParent()->getQualifiedNameAsString() == "rtcg::Context" &&
           call->getNumArgs() >= 2;
  }

  CppPos position(SourceLocation loc) const {
    loc = sm_.getFileLoc(loc);
    return {int(sm_.getSpellingLineNumber(loc)), int(sm_.getSpellingColumnNumber(loc))};
  }
  std::string fileOf(SourceLocation loc) const { return sm_.getFilename(sm_.getFileLoc(loc)).str(); }

  // A compile call whose source is a compile-time string; nullptr for one that is not (a string
  // built at run time is the runtime's to check).
  FoundKernel* record(const CXXMemberCallExpr* call) {
    if (auto it = byCall_.find(call); it != byCall_.end()) return &found_[it->second];
    const StringLiteral* lit = findLiteral(call->getArg(0));
    if (!lit) return nullptr;
    FoundKernel k;
    k.file = fileOf(call->getExprLoc());
    k.callPos = position(call->getExprLoc());
    k.source = decode(lit);
    k.sizesConstant = collectSizes(call->getArg(1), k.sizes, 0);
    k.kernelName = call->getNumArgs() >= 3 ? kernelNameOf(call->getArg(2)) : std::optional<std::string>("");
    byCall_[call] = found_.size();
    found_.push_back(std::move(k));
    return &found_.back();
  }

  // The literal's text with the C++ position of every character, read from its spelling (one
  // token per concatenated piece). Falls back to clang's value at the literal's start when the
  // spelling cannot be read back (a literal made by a macro's # operator, say).
  MappedText decode(const StringLiteral* lit) const {
    MappedText m;
    bool ok = true;
    std::string error;
    for (unsigned i = 0; i < lit->getNumConcatenated() && ok; ++i) {
      SourceLocation loc = sm_.getSpellingLoc(lit->getStrTokenLoc(i));
      std::string file = sm_.getFilename(loc).str();
      if (i == 0) m.file = file;
      unsigned length = Lexer::MeasureTokenLength(loc, sm_, ctx_.getLangOpts());
      StringRef spelling(sm_.getCharacterData(loc), length);
      CppPos start{int(sm_.getSpellingLineNumber(loc)), int(sm_.getSpellingColumnNumber(loc))};
      ok = file == m.file && !file.empty() && appendLiteralToken({spelling.data(), spelling.size()}, start, m, &error);
    }
    if (ok && m.text == lit->getString().str()) return m;
    MappedText fallback;
    SourceLocation at = sm_.getFileLoc(lit->getBeginLoc());
    fallback.file = sm_.getFilename(at).str();
    fallback.text = lit->getString().str();
    fallback.end = position(at);
    fallback.pos.assign(fallback.text.size(), fallback.end);
    return fallback;
  }

  // Reads rtcg::Sizes written as `{{"n", 500}, {"m", m}}` (directly or through a const variable)
  // into `out`; returns true when every binding is a compile-time constant.
  bool collectSizes(const Expr* e, SizeBindings& out, int depth) const {
    if (!e || depth > 32) return false;
    e = e->IgnoreParens()->IgnoreImplicit();
    if (isa<CXXDefaultArgExpr>(e)) return true;
    if (isStdPair(e->getType()) && (isa<CXXConstructExpr>(e) || isa<InitListExpr>(e))) {
      const Expr* name = nullptr;
      const Expr* value = nullptr;
      if (const auto* c = dyn_cast<CXXConstructExpr>(e); c && c->getNumArgs() == 2)
        name = c->getArg(0), value = c->getArg(1);
      if (const auto* l = dyn_cast<InitListExpr>(e); l && l->getNumInits() == 2) name = l->getInit(0), value = l->getInit(1);
      const StringLiteral* lit = name ? findLiteral(name) : nullptr;
      Expr::EvalResult r;
      if (!lit || !value || !value->IgnoreImplicit()->EvaluateAsInt(r, ctx_)) return false;
      out[lit->getString().str()] = r.Val.getInt().getExtValue();
      return true;
    }
    if (const auto* d = dyn_cast<DeclRefExpr>(e)) {
      const auto* v = dyn_cast<VarDecl>(d->getDecl());
      return v && v->getType().isConstQualified() && v->getAnyInitializer() &&
             collectSizes(v->getAnyInitializer(), out, depth + 1);
    }
    // The containers around the pairs: std::map's constructors, initializer lists, temporaries.
    if (isa<CXXConstructExpr>(e) || isa<InitListExpr>(e) || isa<CXXStdInitializerListExpr>(e) ||
        isa<CXXFunctionalCastExpr>(e)) {
      for (const Stmt* child : e->children())
        if (!collectSizes(dyn_cast_or_null<Expr>(child), out, depth + 1)) return false;
      return true;
    }
    return false;
  }

  // CompileOptions::kernel when the options are written in place (`{.kernel = "mm"}`, `{}`, or
  // left out); nullopt when they come from elsewhere.
  std::optional<std::string> kernelNameOf(const Expr* e) const {
    if (isa<CXXDefaultArgExpr>(e)) return "";
    e = strip(e);
    if (const auto* c = dyn_cast<CXXConstructExpr>(e); c && c->getNumArgs() == 0) return "";
    const auto* l = dyn_cast<InitListExpr>(e);
    if (!l) return std::nullopt;
    if (l->getNumInits() == 0) return "";
    const Expr* kernel = strip(l->getInit(0));
    if (isa<ImplicitValueInitExpr>(kernel) || isa<CXXDefaultInitExpr>(kernel)) return "";
    if (const auto* c = dyn_cast<CXXConstructExpr>(kernel); c && c->getNumArgs() == 0) return "";
    if (const StringLiteral* lit = findLiteral(kernel)) return lit->getString().str();
    return std::nullopt;
  }

  CallArg classify(const Expr* arg) const {
    CallArg a;
    a.pos = position(arg->getBeginLoc());
    QualType t = arg->getType();
    if (t->isDependentType()) return a;
    bool isConst = t.getNonReferenceType().isConstQualified();
    QualType element = t;
    if (const auto* spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(t->getAsCXXRecordDecl())) {
      std::string name = spec->getQualifiedNameAsString();
      if (name == "rtcg::Array")
        a.kind = CallArg::Kind::DeviceArray;
      else if (name == "std::vector")
        a.kind = isConst ? CallArg::Kind::ConstHostVector : CallArg::Kind::HostVector;
      else
        return a.typeSpelling = t.getAsString(), a;
      element = spec->getTemplateArgs()[0].getAsType();
    } else if (t->isArithmeticType()) {
      a.kind = CallArg::Kind::Scalar;
    } else {
      a.typeSpelling = t.getAsString();
      return a;
    }
    a.type = scalarTypeOf(element, ctx_);
    a.typeSpelling = a.type ? cppElementName(*a.type) : element.getCanonicalType().getUnqualifiedType().getAsString();
    return a;
  }

  ASTContext& ctx_;
  SourceManager& sm_;
  Collector& out_;
  std::vector<FoundKernel> found_;
  std::map<const CXXMemberCallExpr*, size_t> byCall_;
  std::map<const Decl*, const CXXMemberCallExpr*> kernelVars_;
  std::set<const Decl*> reassigned_;
  std::vector<std::pair<const Expr*, KernelCall>> calls_;
};

class Consumer : public ASTConsumer {
 public:
  explicit Consumer(Collector& out) : out_(out) {}
  void HandleTranslationUnit(ASTContext& ctx) override {
    Visitor v(ctx, out_);
    v.TraverseDecl(ctx.getTranslationUnitDecl());
    v.finish();
  }

 private:
  Collector& out_;
};

class Action : public ASTFrontendAction {
 public:
  explicit Action(Collector& out) : out_(out) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance&, StringRef) override {
    return std::make_unique<Consumer>(out_);
  }

 private:
  Collector& out_;
};

class Factory : public tooling::FrontendActionFactory {
 public:
  explicit Factory(Collector& out) : out_(out) {}
  std::unique_ptr<FrontendAction> create() override { return std::make_unique<Action>(out_); }

 private:
  Collector& out_;
};

}  // namespace

ScanResult scanSources(const ScanRequest& request) {
  std::unique_ptr<tooling::CompilationDatabase> db;
  if (!request.buildDir.empty()) {
    std::string error;
    db = tooling::CompilationDatabase::loadFromDirectory(request.buildDir, error);
    while (!error.empty() && std::isspace((unsigned char)error.back())) error.pop_back();
    for (char& c : error)
      if (c == '\n') c = ';';
    if (!db)
      throw Error(fmt::format("rtcg-scan: no compilation database in '{}' ({}); configure with "
                              "CMAKE_EXPORT_COMPILE_COMMANDS=ON",
                              request.buildDir, error));
    db = tooling::inferMissingCompileCommands(std::move(db));  // files the database does not list
  } else {
    db = std::make_unique<tooling::FixedCompilationDatabase>(".", request.compileArgs);
  }
  std::vector<std::string> files = request.files.empty() ? db->getAllFiles() : request.files;
  if (files.empty()) throw Error("rtcg-scan: no source files to scan");

  tooling::ClangTool tool(*db, files);
  // The tool is not installed next to clang, so point clang at its builtin headers; the
  // application's own warnings are its compiler's business, not the scan's.
  std::vector<std::string> args = {"-resource-dir=" RTCG_CLANG_RESOURCE_DIR, "-w"};
  args.insert(args.end(), request.extraArgs.begin(), request.extraArgs.end());
  tool.appendArgumentsAdjuster(tooling::getInsertArgumentAdjuster(args, tooling::ArgumentInsertPosition::END));

  Collector collector;
  Factory factory(collector);
  ScanResult result;
  result.cppErrors = tool.run(&factory) != 0;
  result.kernels = std::move(collector.kernels);
  return result;
}

}  // namespace rtcg

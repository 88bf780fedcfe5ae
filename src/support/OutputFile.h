// Writing an output file the way a compiler should: atomically, into what the path names.
#pragma once
#include <string>
#include <string_view>

namespace rtcg {

// Writes `data` to `path`: to a temporary file in the target's folder, fsync'ed and renamed into
// place, so a failure (a full disk) never leaves a truncated file or a stale temporary. Throws
// rtcg::Error ("cannot write 'PATH': why") when it cannot. Unlike a plain rename over the path:
//  - a symbolic link is written through (its target is replaced, the link stays) when the link is
//    the writer's own; one owned by another user is refused (a link planted in a shared /tmp);
//  - an existing target that is not a regular file (/dev/full, a directory, a FIFO) is refused
//    rather than replaced (as root, `-o /dev/full` used to turn the device node into a file);
//  - a new file gets 0666 less the umask, a replaced one keeps its mode less the set-id bits.
void writeOutputFile(const std::string& path, std::string_view data);

// What `path` names once symbolic links are followed (up to 40 of them, as the kernel does); the
// path itself when it is not a link. A dangling link names its missing target. Throws rtcg::Error
// for a link owned by another user than the effective one.
std::string resolveOutputPath(const std::string& path);

}  // namespace rtcg

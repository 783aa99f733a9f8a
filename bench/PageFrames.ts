import { closeSync, openSync, readFileSync, readSync } from "node:fs"

/*
 * The memory a process tree holds, each physical page counted once.
 *
 * RSS counts every page a process maps, so the sum of a tree's RSS counts a page mapped by three processes three
 * times: node's own code and read-only data (about 42 MB resident in each Gatehouse process, the same physical
 * pages in all of them) are in every process's RSS. PSS splits a shared page between the processes that map it,
 * including processes outside the tree (the bench's own node), so the tree's PSS is less than what the tree alone
 * would hold. A container's memory limit charges each page once to the container: the count below is that figure,
 * read from /proc/<pid>/pagemap (the physical frame of each resident page of each mapping with resident pages).
 * Linux shows frame numbers only to a process with CAP_SYS_ADMIN; elsewhere they read as 0 and the count is
 * undefined, not a guess.
 */

const PAGE_BYTES = 4096
/** Bit 63 of an entry (bit 31 of its high word): the page is in memory. */
const PRESENT = 0x8000_0000
/** Bits 32–54 of an entry (the high word's low 23 bits): the frame number's upper part. */
const FRAME_HIGH_MASK = 0x7f_ffff

/** A mapping's range of virtual pages [firstPage, endPage). */
export interface PageRange {
  readonly firstPage: number
  readonly endPage: number
}

/** The mappings of /proc/<pid>/smaps with at least one resident page, as page ranges. */
export const residentRanges = (smaps: string): ReadonlyArray<PageRange> => {
  const ranges: Array<PageRange> = []
  let current: PageRange | undefined
  for (const line of smaps.split("\n")) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) /.exec(line)
    if (header !== null) {
      current = { firstPage: parseInt(header[1]!, 16) / PAGE_BYTES, endPage: parseInt(header[2]!, 16) / PAGE_BYTES }
      continue
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line)
    if (rss !== null && current !== undefined && Number(rss[1]) > 0) ranges.push(current)
  }
  return ranges
}

/**
 * What one 64-bit pagemap entry (little-endian: its low and high 32-bit words) says: the physical frame of a present
 * page (bits 0–54), "hidden" for a present page whose frame the reader may not see (reads as 0 without
 * CAP_SYS_ADMIN), or undefined for a page not in memory (never touched, or swapped out). Read as two words rather
 * than a BigInt: the sampler reads ~100,000 entries a second while the bench measures.
 */
export const pageFrame = (low: number, high: number): number | "hidden" | undefined => {
  if ((high & PRESENT) === 0) return undefined
  const frame = (high & FRAME_HIGH_MASK) * 2 ** 32 + (low >>> 0)
  return frame === 0 ? "hidden" : frame
}

/** Entries read from pagemap at a time: 512 kB. */
const CHUNK_PAGES = 65536

/**
 * Adds the frame of every resident page of `pid` to `frames`; false when the frames are hidden from this process.
 * A process gone between the listing and the reading adds nothing.
 */
const addFrames = (pid: number, frames: Set<number>): boolean => {
  let smaps: string
  let fd: number
  try {
    smaps = readFileSync(`/proc/${pid}/smaps`, "utf8")
    fd = openSync(`/proc/${pid}/pagemap`, "r")
  } catch {
    return true
  }
  try {
    // pagemap is little-endian, as is every machine this runs on (x86-64, arm64): read as 32-bit words directly.
    const words = new Uint32Array(CHUNK_PAGES * 2)
    for (const range of residentRanges(smaps)) {
      for (let page = range.firstPage; page < range.endPage; page += CHUNK_PAGES) {
        const count = Math.min(CHUNK_PAGES, range.endPage - page)
        const entries = readSync(fd, words, 0, count * 8, page * 8) >>> 3
        for (let i = 0; i < entries; i++) {
          const high = words[2 * i + 1]!
          if ((high & PRESENT) === 0) continue // the common case in V8's reservations: skip the call
          const frame = pageFrame(words[2 * i]!, high)
          if (frame === "hidden") return false
          if (frame !== undefined) frames.add(frame)
        }
      }
    }
    return true
  } catch {
    return true // the process exited while being read
  } finally {
    closeSync(fd)
  }
}

/** MB of physical memory the processes hold together, each page once; undefined when frames are hidden (not root). */
export const uniqueResidentMb = (pids: ReadonlyArray<number>): number | undefined => {
  const frames = new Set<number>()
  for (const pid of pids) if (!addFrames(pid, frames)) return undefined
  return (frames.size * PAGE_BYTES) / (1024 * 1024)
}

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { FastCheck, Option } from "effect"
import {
  ancestors, cgroupCpuLimit, cpusFromCgroupV1, cpusFromCgroupV2, parseProcCgroup, usableCpus
} from "../../src/platform/process/ContainerCpus.js"

describe("cpusFromCgroupV2 (cpu.max)", () => {
  it("reads the quota as whole CPUs, rounding a fraction up", () => {
    expect(cpusFromCgroupV2("max 100000\n")).toStrictEqual(Option.none())
    expect(cpusFromCgroupV2("150000 100000\n")).toStrictEqual(Option.some(2))
    expect(cpusFromCgroupV2("200000 100000")).toStrictEqual(Option.some(2))
    expect(cpusFromCgroupV2("50000 100000")).toStrictEqual(Option.some(1))
    expect(cpusFromCgroupV2("400000 50000")).toStrictEqual(Option.some(8))
  })

  it("reads nothing from garbage", () => {
    for (const text of ["", "max", "abc 100000", "-1 100000", "100000 0", "0 100000", "1.5 100000", "1 2 3"]) {
      expect(cpusFromCgroupV2(text)).toStrictEqual(Option.none())
    }
  })

  it.prop("is ceil(quota / period), at least 1", {
    quota: FastCheck.integer({ min: 1, max: 10_000_000 }),
    period: FastCheck.integer({ min: 1_000, max: 1_000_000 })
  }, ({ period, quota }) => {
    expect(cpusFromCgroupV2(`${quota} ${period}`)).toStrictEqual(Option.some(Math.max(1, Math.ceil(quota / period))))
  })

  it.prop("never throws, and any answer is a positive integer", { text: FastCheck.string() }, ({ text }) => {
    const cpus = cpusFromCgroupV2(text)
    if (Option.isSome(cpus)) expect(Number.isInteger(cpus.value) && cpus.value >= 1).toBe(true)
  })
})

describe("cpusFromCgroupV1 (cpu.cfs_quota_us, cpu.cfs_period_us)", () => {
  it("reads -1 as no limit and a quota as whole CPUs", () => {
    expect(cpusFromCgroupV1("-1\n", "100000\n")).toStrictEqual(Option.none())
    expect(cpusFromCgroupV1("150000\n", "100000\n")).toStrictEqual(Option.some(2))
    expect(cpusFromCgroupV1("100000", "100000")).toStrictEqual(Option.some(1))
    expect(cpusFromCgroupV1("garbage", "100000")).toStrictEqual(Option.none())
    expect(cpusFromCgroupV1("100000", "")).toStrictEqual(Option.none())
  })

  it.prop("agrees with v2 on the same quota and period", {
    quota: FastCheck.integer({ min: 1, max: 10_000_000 }),
    period: FastCheck.integer({ min: 1_000, max: 1_000_000 })
  }, ({ period, quota }) => {
    expect(cpusFromCgroupV1(String(quota), String(period))).toStrictEqual(cpusFromCgroupV2(`${quota} ${period}`))
  })
})

describe("usableCpus", () => {
  it.prop("is min(cores, limit), at least 1", {
    cores: FastCheck.integer({ min: 0, max: 256 }),
    limit: FastCheck.option(FastCheck.integer({ min: 1, max: 256 }), { nil: undefined })
  }, ({ cores, limit }) => {
    const cpus = usableCpus(cores, Option.fromNullable(limit))
    expect(cpus).toBe(Math.max(1, Math.min(cores, limit ?? cores)))
  })
})

describe("parseProcCgroup and ancestors", () => {
  it("reads v1 and v2 lines and skips the rest", () => {
    expect(parseProcCgroup("12:cpu,cpuacct:/docker/abc\n0::/user.slice/x.scope\nnonsense\n3:pids\n")).toStrictEqual([
      { hierarchy: "12", controllers: ["cpu", "cpuacct"], path: "/docker/abc" },
      { hierarchy: "0", controllers: [], path: "/user.slice/x.scope" }
    ])
  })

  it("walks from the path up to the root", () => {
    expect(ancestors("/a/b/c")).toStrictEqual(["/a/b/c", "/a/b", "/a", "/"])
    expect(ancestors("/")).toStrictEqual(["/"])
  })
})

describe("cgroupCpuLimit, on a fake /proc/self/cgroup and /sys/fs/cgroup", () => {
  const root = mkdtempSync(join(tmpdir(), "gatehouse-cgroup-"))
  afterAll(() => rmSync(root, { recursive: true, force: true }))
  let n = 0
  /** A fresh tree holding `files` (paths relative to its /sys/fs/cgroup) and /proc/self/cgroup. */
  const fake = (procSelfCgroup: string, files: Record<string, string>) => {
    const dir = join(root, String(++n))
    const sysFsCgroup = join(dir, "sys")
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(sysFsCgroup, path)), { recursive: true })
      writeFileSync(join(sysFsCgroup, path), text)
    }
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, "cgroup"), procSelfCgroup)
    return { procSelfCgroup: join(dir, "cgroup"), sysFsCgroup }
  }

  it("v2: the process's own cgroup", () => {
    expect(cgroupCpuLimit(fake("0::/kubepods/pod1/c1\n", { "kubepods/pod1/c1/cpu.max": "150000 100000\n" }))).toStrictEqual(Option.some(2))
  })

  it("v2: a limit set on an ancestor, the smallest of them", () => {
    const files = fake("0::/a/b/c\n", { "a/b/c/cpu.max": "max 100000\n", "a/b/cpu.max": "300000 100000\n", "a/cpu.max": "400000 100000\n" })
    expect(cgroupCpuLimit(files)).toStrictEqual(Option.some(3))
  })

  it("v2: the container's own cgroup mounted at the root, the path being the host's", () => {
    expect(cgroupCpuLimit(fake("0::/system.slice/docker-abc.scope\n", { "cpu.max": "100000 100000\n" }))).toStrictEqual(Option.some(1))
  })

  it("v2: no limit anywhere", () => {
    expect(cgroupCpuLimit(fake("0::/a\n", { "a/cpu.max": "max 100000\n", "cpu.max": "max 100000\n" }))).toStrictEqual(Option.none())
  })

  it("v1: cpu,cpuacct mounted together", () => {
    const files = fake("4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n", {
      "cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "250000\n",
      "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n"
    })
    expect(cgroupCpuLimit(files)).toStrictEqual(Option.some(3))
  })

  it("v1: cpu mounted alone, quota -1 (this kind of machine)", () => {
    const files = fake("2:cpuacct:/\n1:cpu:/\n0::/\n", { "cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n" })
    expect(cgroupCpuLimit(files)).toStrictEqual(Option.none())
  })

  it("v1: the container's cgroup at the root of the mount", () => {
    const files = fake("3:cpu,cpuacct:/docker/abc\n", { "cpu,cpuacct/cpu.cfs_quota_us": "100000", "cpu,cpuacct/cpu.cfs_period_us": "100000" })
    expect(cgroupCpuLimit(files)).toStrictEqual(Option.some(1))
  })

  it("nothing readable: no limit", () => {
    expect(cgroupCpuLimit({ procSelfCgroup: join(root, "missing"), sysFsCgroup: join(root, "missing-sys") })).toStrictEqual(Option.none())
    expect(cgroupCpuLimit(fake("garbage\n", {}))).toStrictEqual(Option.none())
  })

})

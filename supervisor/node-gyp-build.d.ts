/**
 * The part of node-gyp-build (no types of its own) the addon loader uses: its matching of
 * prebuildify's `prebuilds/<platform>-<arch>/<name>.<tags>.node` (supervisor/native.ts).
 */
declare module 'node-gyp-build/node-gyp-build.js' {
  interface PrebuildTags {
    file: string;
  }
  interface PrebuildTuple {
    name: string;
  }
  const nodeGypBuild: {
    parseTuple(name: string): PrebuildTuple | undefined;
    matchTuple(platform: string, arch: string): (tuple: PrebuildTuple | undefined) => boolean;
    compareTuples(a: PrebuildTuple, b: PrebuildTuple): number;
    parseTags(file: string): PrebuildTags | undefined;
    matchTags(runtime: string, abi: string): (tags: PrebuildTags | undefined) => boolean;
    compareTags(runtime: string): (a: PrebuildTags, b: PrebuildTags) => number;
  };
  export default nodeGypBuild;
}

/** bottleneck ships types for its main entry only; the light build (what the Octokit plugins use) has the same API minus Redis clustering. */
declare module 'bottleneck/light.js' {
  import Bottleneck from 'bottleneck';
  export default Bottleneck;
}

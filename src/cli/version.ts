/** Fleet's version, as package.json says (a test holds them equal): the bundle cannot read package.json at run time. */
export const VERSION = '0.1.0';

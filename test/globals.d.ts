// Tests read many JSON bodies of known shape; let them be `any` instead of casting each one.
export {};
declare global {
  interface Response {
    json(): Promise<any>;
  }
  interface Request {
    json(): Promise<any>;
  }
}

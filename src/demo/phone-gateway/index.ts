/** The demo's telephone-gateway simulator (gateway.ts). */
export { type PhoneGateway, startPhoneGateway } from "./gateway.js";
export type { PhoneGatewayOptions } from "./options.js";

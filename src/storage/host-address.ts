/**
 * A database host as the config's "hosts" gives it, and the account to log in with: the host's
 * own user and password where it names them, else the storage section's. Backends (their pools),
 * the MyRocks engine and the move engines resolve a host through these, so the rule is written once.
 */
export interface HostAddress {
  host?: string;
  port?: number;
  socket?: string;
  user?: string;
  password?: string;
}

export interface HostLogin {
  user: string;
  password?: string;
}

/** `address` with the login filled in from `defaults` where the host names none. */
export function withLogin<A extends HostAddress>(address: A, defaults: HostLogin | { user: string; password?: string | undefined }): A & HostLogin {
  const password = address.password ?? defaults.password;
  return { ...address, user: address.user ?? defaults.user, ...(password !== undefined ? { password } : {}) };
}

/** Where to connect and as whom (only the fields the host has): what a host pool's options take. */
export function poolTarget(address: HostAddress, defaults: HostLogin | { user: string; password?: string | undefined }): { host?: string; port?: number; socket?: string } & HostLogin {
  const a = withLogin(address, defaults);
  return {
    ...(a.host !== undefined ? { host: a.host } : {}),
    ...(a.port !== undefined ? { port: a.port } : {}),
    ...(a.socket !== undefined ? { socket: a.socket } : {}),
    user: a.user,
    ...(a.password !== undefined ? { password: a.password } : {}),
  };
}

// The configuration for an operator's command (src/cli/db-*.ts): as the service reads it, or one line
// naming the bad setting and exit code 78 (EX_CONFIG), as the service does.
import { type Config, ConfigError, loadConfig } from '../config/index.ts';

export function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`Configuration error: ${error.message}`);
      process.exit(78);
    }
    throw error;
  }
}

/** An error the page could not get past (an API refusal, a request that failed), read out at once. */
export const ErrorAlert = ({ text }: { text: string | null | undefined }) =>
  text ? (
    <p role="alert" class="error">
      {text}
    </p>
  ) : null;
